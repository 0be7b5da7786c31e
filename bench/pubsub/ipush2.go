package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/testenv"
)

// clientFigures are one client's figures in one round of the ipush2 part.
type clientFigures struct {
	perS     float64 // deliveries per second in the window
	lost     float64 // lost at the end (-1: unknown)
	cores    float64 // client CPU in the window, cores
	usPerDel float64 // client CPU-µs per delivery
	rssMB    float64 // peak RSS of the client processes
	note     string
}

const (
	ipushPubs = 5
	ipushRate = 35
	ipushSize = 100
)

func benchIpush2(rounds, subs int, steady time.Duration, natsBin, natsVersion string) {
	asked := float64(ipushPubs * ipushRate * (subs / ipushPubs))
	fmt.Printf("## ipush-2 against nats-server: %d subscribers, %d publishers x %d msg/s x %d B (%.0f deliveries/s asked), %v publishing\n\n",
		subs, ipushPubs, ipushRate, ipushSize, asked, steady)
	fmt.Println("The window is the publishing time less 2 s at each end; CPU is the client processes' user+system time in it (/proc).")
	fmt.Println()
	fmt.Printf("%-5s %-11s %13s %8s %11s %14s %8s  %s\n", "round", "client", "deliveries/s", "lost", "CPU cores", "CPU µs/deliv.", "RSS MB", "note")
	tools := []string{"throng", "nats.go"}
	if natsBin != "" {
		tools = append(tools, "nats bench")
	}
	all := map[string][]clientFigures{}
	for r := 1; r <= rounds; r++ {
		for i := range tools {
			// Alternate the order from round to round.
			tool := tools[(i+r-1)%len(tools)]
			var f clientFigures
			locked(func() {
				b, err := testenv.StartNATSServer(context.Background(), testenv.NATSServerOptions{})
				check(err)
				defer b.Stop()
				switch tool {
				case "throng":
					f = ipushThrong(b, subs, steady)
				case "nats.go":
					f = ipushNatsgo(b, subs, steady)
				default:
					f = ipushNatsBench(natsBin, b, subs, steady)
				}
			})
			all[tool] = append(all[tool], f)
			fmt.Printf("%-5d %-11s %13.0f %8.0f %11.2f %14.2f %8.1f  %s\n", r, tool, f.perS, f.lost, f.cores, f.usPerDel, f.rssMB, f.note)
		}
	}
	med := func(tool string, get func(clientFigures) float64) float64 {
		var xs []float64
		for _, f := range all[tool] {
			xs = append(xs, get(f))
		}
		return benchkit.Median(xs)
	}
	fmt.Println()
	fmt.Printf("%-12s %13s %8s %11s %14s %8s\n", "median", "deliveries/s", "lost", "CPU cores", "CPU µs/deliv.", "RSS MB")
	for _, t := range tools {
		fmt.Printf("%-12s %13.0f %8.0f %11.2f %14.2f %8.1f\n", t,
			med(t, func(f clientFigures) float64 { return f.perS }), med(t, func(f clientFigures) float64 { return f.lost }),
			med(t, func(f clientFigures) float64 { return f.cores }), med(t, func(f clientFigures) float64 { return f.usPerDel }),
			med(t, func(f clientFigures) float64 { return f.rssMB }))
	}
	fmt.Println()
	tu := med("throng", func(f clientFigures) float64 { return f.usPerDel })
	gu := med("nats.go", func(f clientFigures) float64 { return f.usPerDel })
	verdict := "met"
	if tu > 0.7*gu {
		verdict = "MISSED"
	}
	fmt.Printf("throng / nats.go   CPU per delivery: %.2fx (target <= 0.70x: %s)\n", tu/gu, verdict)
	// The same ratio round by round (both clients under that round's
	// conditions), and its median.
	var paired []string
	var pr []float64
	for i := range min(len(all["throng"]), len(all["nats.go"])) {
		x := all["throng"][i].usPerDel / all["nats.go"][i].usPerDel
		pr = append(pr, x)
		paired = append(paired, fmt.Sprintf("%.2fx", x))
	}
	fmt.Printf("throng / nats.go   CPU per delivery, round by round: %s; median %.2fx\n", strings.Join(paired, " "), benchkit.Median(pr))
	fmt.Printf("throng / nats.go   deliveries/s:     %.3fx\n",
		med("throng", func(f clientFigures) float64 { return f.perS })/med("nats.go", func(f clientFigures) float64 { return f.perS }))
	if natsBin != "" {
		bu := med("nats bench", func(f clientFigures) float64 { return f.usPerDel })
		fmt.Printf("throng / nats bench CPU per delivery: %.2fx (natscli %s)\n", tu/bu, natsVersion)
		fmt.Printf("throng / nats bench deliveries/s:     %.3fx\n",
			med("throng", func(f clientFigures) float64 { return f.perS })/med("nats bench", func(f clientFigures) float64 { return f.perS }))
	}
	fmt.Println()
}

// ipushThrong runs the ipush-2 preset against b with the built binary.
func ipushThrong(b *testenv.Broker, subs int, steady time.Duration) clientFigures {
	ss, run := throngRun(250*time.Millisecond, "ipush-2", "--target", b.URL, "--subscribers", strconv.Itoa(subs),
		"--duration", steady.String())
	rep := run.Repetitions[0]
	di := -1
	for i, a := range run.Meta.Actions {
		if a == "deliver" {
			di = i
		}
	}
	// The publishers start at 11 s (the preset's start); the steady state
	// ends at 10 s + steady.
	from, to := 13.0, 10+steady.Seconds()-2
	var w0, w1 float64 = -1, -1
	var n float64
	for _, iv := range rep.Intervals {
		if iv.Phase != "steady" || iv.StartS < from || iv.StartS+iv.DurationS > to || di < 0 {
			continue
		}
		if w0 < 0 {
			w0 = iv.StartS
		}
		w1 = iv.StartS + iv.DurationS
		a := iv.Actions[di]
		n += float64(a.Count)
		for _, e := range a.Errors {
			n -= float64(e)
		}
	}
	f := clientFigures{lost: -1}
	if w0 < 0 || n == 0 {
		f.note = "no deliveries in the window"
		return f
	}
	t0 := rep.StartedAt.Add(time.Duration(w0 * float64(time.Second)))
	t1 := rep.StartedAt.Add(time.Duration(w1 * float64(time.Second)))
	cpu := cpuAt(ss, t1) - cpuAt(ss, t0)
	f.perS = n / (w1 - w0)
	f.cores = cpu / (w1 - w0)
	f.usPerDel = cpu / n * 1e6
	for _, s := range ss {
		f.rssMB = max(f.rssMB, float64(s.rssKB)/1024)
	}
	d := actionOf(run, "all", "deliver")
	f.lost = float64(d.ErrorsByClass["lost"])
	p := actionOf(run, "steady", "deliver")
	f.note = fmt.Sprintf("p99 %.1f ms, drain %.1fs", p.Latency.P99Ms, rep.DrainS)
	kinds := map[string]bool{}
	for _, t := range rep.Taints {
		if t.Phase == "steady" && !kinds[t.Kind] {
			kinds[t.Kind] = true
			f.note += ", steady tainted " + t.Kind
		}
	}
	return f
}

// ipushNatsgo runs this command as the plain nats.go client.
func ipushNatsgo(b *testenv.Broker, subs int, steady time.Duration) clientFigures {
	self, err := os.Executable()
	check(err)
	cmd := exec.Command(self, "-natsgo", "-url", b.URL, "-subs", strconv.Itoa(subs), "-pubs", strconv.Itoa(ipushPubs),
		"-rate", strconv.Itoa(ipushRate), "-size", strconv.Itoa(ipushSize), "-dur", steady.String())
	out, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	done := make(chan struct{})
	stopW := make(chan struct{})
	ssCh := watch(cmd.Process.Pid, 250*time.Millisecond, stopW)
	type mark struct {
		n float64
		t time.Time
	}
	var w0, w1 mark
	var res natsgoResult
	sc := bufio.NewScanner(out)
	timer := time.AfterFunc(steady+3*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 3 && (fs[0] == "w0" || fs[0] == "w1"):
			n, _ := strconv.ParseFloat(fs[1], 64)
			ns, _ := strconv.ParseInt(fs[2], 10, 64)
			m := mark{n, time.Unix(0, ns)}
			if fs[0] == "w0" {
				w0 = m
			} else {
				w1 = m
			}
		case len(fs) == 2 && fs[0] == "result":
			json.Unmarshal([]byte(fs[1]), &res)
		}
	}
	close(stopW)
	ss := <-ssCh
	cmd.Wait()
	close(done)
	f := clientFigures{lost: float64(res.Lost)}
	if w1.t.IsZero() || w1.n <= w0.n {
		f.lost, f.note = -1, "no window"
		return f
	}
	dt := w1.t.Sub(w0.t).Seconds()
	cpu := cpuAt(ss, w1.t) - cpuAt(ss, w0.t)
	f.perS = (w1.n - w0.n) / dt
	f.cores = cpu / dt
	f.usPerDel = cpu / (w1.n - w0.n) * 1e6
	for _, s := range ss {
		f.rssMB = max(f.rssMB, float64(s.rssKB)/1024)
	}
	f.note = fmt.Sprintf("%d/%d received, %d duplicates, connect %.1fs", res.Received, res.Expected, res.Duplicates, res.ConnectS)
	return f
}

// buildNatscli builds the natscli module's `nats` at version into the
// temporary directory: the module is downloaded by the go command (its
// proxy) and built in a copy of its own directory, as its own main module.
// (`go install github.com/nats-io/natscli/nats@VERSION` fails here: it
// looks the module's deprecation up in its version list, which the proxy
// refuses for natscli, while a pinned version downloads.)
func buildNatscli(version string) string {
	dl := exec.Command("go", "mod", "download", "-json", "github.com/nats-io/natscli@"+version)
	dl.Dir = tmp
	dl.Stderr = os.Stderr
	b, err := dl.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench/pubsub: natscli %s cannot be downloaded (%v): skipping nats bench\n", version, err)
		return ""
	}
	var m struct{ Dir string }
	check(json.Unmarshal(b, &m))
	src := filepath.Join(tmp, "natscli")
	check(exec.Command("cp", "-r", m.Dir, src).Run())
	check(exec.Command("chmod", "-R", "u+w", src).Run())
	out := filepath.Join(tmp, "nats")
	build := exec.Command("go", "build", "-o", out, "./nats")
	build.Dir = src
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench/pubsub: natscli %s does not build (%v): skipping nats bench\n", version, err)
		return ""
	}
	return out
}

// ipushNatsBench runs the same shape with `nats bench`: one `nats bench
// sub` of subs/5 clients per subject (each client its own connection and
// subscription), and once they are all connected one `nats bench pub` per
// subject, pacing its messages with --sleep. Each sub process ends when
// every client has every message, so its ending is the zero-loss check.
// Deliveries in the window are estimated from the delivery rate over the
// whole publishing (every message times its subscribers, over the time
// from the first publish to the last sub process ending).
func ipushNatsBench(natsBin string, b *testenv.Broker, subs int, steady time.Duration) clientFigures {
	msgs := int(steady.Seconds() * ipushRate)
	per := subs / ipushPubs
	env := append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+tmp)
	start := func(args ...string) (*exec.Cmd, chan struct{}) {
		cmd := exec.Command(natsBin, append([]string{"--server", b.URL}, args...)...)
		cmd.Env = env
		logf, _ := os.Create(filepath.Join(tmp, fmt.Sprintf("natsbench-%d.log", time.Now().UnixNano())))
		cmd.Stdout, cmd.Stderr = logf, logf
		check(cmd.Start())
		done := make(chan struct{})
		go func() { cmd.Wait(); logf.Close(); close(done) }()
		return cmd, done
	}
	type proc struct {
		cmd  *exec.Cmd
		done chan struct{}
		ss   <-chan []sample
		stop chan struct{}
	}
	var procs []*proc
	add := func(args ...string) *proc {
		cmd, done := start(args...)
		p := &proc{cmd: cmd, done: done, stop: make(chan struct{})}
		p.ss = watch(cmd.Process.Pid, 250*time.Millisecond, p.stop)
		procs = append(procs, p)
		return p
	}
	var subsP []*proc
	for s := 0; s < ipushPubs; s++ {
		subsP = append(subsP, add("bench", "sub", "throng."+strconv.Itoa(s), "--clients", strconv.Itoa(per),
			"--msgs", strconv.Itoa(msgs), "--size", strconv.Itoa(ipushSize), "--no-progress"))
	}
	f := clientFigures{lost: -1}
	cleanup := func() {
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				stop(p.cmd, p.done)
			}
		}
	}
	port := portOf(b.Addr)
	deadline := time.Now().Add(2 * time.Minute)
	for established(port) < per*ipushPubs {
		if time.Now().After(deadline) {
			f.note = fmt.Sprintf("only %d subscribers connected", established(port))
			cleanup()
			return f
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // every client's SUB is flushed before its connection counts
	sleep := time.Second / ipushRate
	t0 := time.Now()
	for s := 0; s < ipushPubs; s++ {
		add("bench", "pub", "throng."+strconv.Itoa(s), "--clients", "1", "--msgs", strconv.Itoa(msgs),
			"--size", strconv.Itoa(ipushSize), "--sleep", sleep.String(), "--no-progress")
	}
	w0 := t0.Add(2 * time.Second)
	w1 := t0.Add(steady - 2*time.Second)
	complete := true
	bound := time.After(steady + 60*time.Second)
	var last time.Time
	for _, p := range subsP {
		select {
		case <-p.done:
			last = time.Now()
		case <-bound:
			complete = false
		}
		if !complete {
			break
		}
	}
	for _, p := range procs[ipushPubs:] {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
		}
	}
	cleanup()
	var cpu float64
	for _, p := range procs {
		close(p.stop)
		ss := <-p.ss
		cpu += cpuAt(ss, w1) - cpuAt(ss, w0)
		var peak float64
		for _, s := range ss {
			peak = max(peak, float64(s.rssKB)/1024)
		}
		f.rssMB += peak
	}
	total := float64(msgs * per * ipushPubs)
	dt := w1.Sub(w0).Seconds()
	if complete {
		f.lost = 0
		f.perS = total / last.Sub(t0).Seconds()
		f.note = fmt.Sprintf("every client got its %d messages; rate over %.1fs", msgs, last.Sub(t0).Seconds())
	} else {
		f.perS = total / (steady.Seconds() + 60)
		f.note = "some sub processes never got every message (loss, or a slow publisher): rate is a lower bound"
	}
	f.cores = cpu / dt
	f.usPerDel = cpu / (f.perS * dt) * 1e6
	return f
}
