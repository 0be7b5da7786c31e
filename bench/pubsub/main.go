// Command pubsub benchmarks throng's pub/sub family on this machine and
// prints tables, each with its peer measured in the same run, the tools
// alternating round after round:
//
//		go run ./bench/pubsub [-parts ipush2,memory,mosquitto] [-rounds 3] [-steady 60s]
//
//	  - ipush2: the iPush study's scenario 2 at full scale (5 publishers x 35 msg/s x
//	    100 B, 3,000 subscribers: 105,000 deliveries/s) against nats-server
//	    from testenv, three clients in turn: throng (the built binary, in its
//	    own process), a plain nats.go program of the same shape (this
//	    command re-run as -natsgo: 3,000 subscriptions on their own
//	    connections, 5 publishers at the same rate), and `nats bench` of the
//	    natscli module (built from the module proxy into a temporary
//	    directory: 5 `nats bench sub` of 600 clients and 5 `nats bench pub`).
//	    Each client's CPU is read from /proc over the same part of the
//	    steady state; deliveries in that window come from the client's own
//	    count. Target: throng <= 0.7x the nats.go client's CPU per delivery.
//	  - memory: the generator's resident memory per idle subscriber
//	    connection (throng with a passive group only) against mosquitto and
//	    nats-server, at -memsubs (3,000 and 10,000): the growth of the
//	    process's RSS from before the first connection to all connected,
//	    divided by the connections. Targets: MQTT <= 10 KB, NATS <= 15 KB.
//	  - mosquitto: ipush-2's shape (3,000 subscribers, 5 publishers, 100 B)
//	    against mosquitto, stepping the publishers' rate: the highest
//	    delivery rate sustained with zero loss and a delivery p99 under
//	    -p99.
//
// Every timed measurement holds an exclusive flock on /tmp/throng-bench.lock
// (bench/mail takes the same lock), so two benchmarks on this machine never
// overlap. Everything runs on loopback; every process started is stopped.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/result"
)

var (
	bin string // the built throng
	tmp string
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-natsgo" {
		natsgoMain(os.Args[2:])
		return
	}
	parts := flag.String("parts", "ipush2,memory,mosquitto", "parts to run")
	rounds := flag.Int("rounds", 3, "rounds of each comparison (tools alternate within a round)")
	steady := flag.Duration("steady", 60*time.Second, "ipush2: publishing time")
	subs := flag.Int("subscribers", 3000, "ipush2 and mosquitto: subscribers")
	memSubs := flag.String("memsubs", "3000,10000", "memory: subscriber counts")
	natscli := flag.String("natscli", "v0.3.0", "natscli module version for `nats bench` (empty: skip it)")
	rates := flag.String("rates", "10,15,20,25,30,35", "mosquitto: publisher rates to step through, msg/s each")
	stepSteady := flag.Duration("step-steady", 15*time.Second, "mosquitto: publishing time of each step")
	p99 := flag.Duration("p99", 500*time.Millisecond, "mosquitto: the delivery p99 bound of a sustained rate")
	flag.Parse()
	raiseNoFile()
	var err error
	tmp, err = os.MkdirTemp("", "throng-bench-pubsub-")
	check(err)
	defer os.RemoveAll(tmp)
	bin = filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "github.com/throng-io/throng/cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	fmt.Printf("pub/sub benchmarks, %s, %d cores, %d rounds\n\n", time.Now().UTC().Format(time.RFC3339), benchkit.Cores(), *rounds)
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "ipush2":
			nats := ""
			if *natscli != "" {
				nats = buildNatscli(*natscli)
			}
			benchIpush2(*rounds, *subs, *steady, nats, *natscli)
		case "memory":
			var ns []int
			for _, s := range strings.Split(*memSubs, ",") {
				n, err := strconv.Atoi(s)
				check(err)
				ns = append(ns, n)
			}
			benchMemory(*rounds, ns)
		case "mosquitto":
			var rs []int
			for _, s := range strings.Split(*rates, ",") {
				n, err := strconv.Atoi(s)
				check(err)
				rs = append(rs, n)
			}
			benchMosquitto(*rounds, *subs, rs, *stepSteady, *p99)
		default:
			check(fmt.Errorf("unknown part %q", p))
		}
	}
}

// locked runs f holding the benchmarks' lock (benchkit.Locked).
func locked(f func()) { check(benchkit.Locked("bench/pubsub", f)) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/pubsub:", err)
		os.Exit(1)
	}
}

func raiseNoFile() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// sample is one reading of a process.
type sample struct {
	t     time.Time
	cpu   float64 // user+system seconds
	rssKB int64
	fds   int
}

// read samples /proc/PID (the process alone, not its children).
func read(pid int) (sample, bool) {
	s := sample{t: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.cpu = (ut + st) / 100 // USER_HZ
	st2, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(st2), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			s.rssKB, _ = strconv.ParseInt(strings.Fields(line)[1], 10, 64)
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(ents)
	}
	return s, true
}

// cpuAt interpolates a process's CPU seconds at t from its samples.
func cpuAt(ss []sample, t time.Time) float64 {
	for i := 1; i < len(ss); i++ {
		if !ss[i].t.Before(t) {
			a, b := ss[i-1], ss[i]
			span := b.t.Sub(a.t).Seconds()
			if span <= 0 {
				return b.cpu
			}
			return a.cpu + (b.cpu-a.cpu)*t.Sub(a.t).Seconds()/span
		}
	}
	if len(ss) == 0 {
		return 0
	}
	return ss[len(ss)-1].cpu
}

// watch samples pid every period until stop is closed.
func watch(pid int, period time.Duration, stop <-chan struct{}) <-chan []sample {
	out := make(chan []sample, 1)
	go func() {
		var ss []sample
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			if s, ok := read(pid); ok {
				ss = append(ss, s)
			}
			select {
			case <-stop:
				if s, ok := read(pid); ok {
					ss = append(ss, s)
				}
				out <- ss
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// stop ends a process this benchmark started: SIGINT, then SIGKILL.
func stop(cmd *exec.Cmd, done <-chan struct{}) {
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// established counts the TCP connections of this host to port (the
// clients' ends, in state ESTABLISHED), from /proc/net/tcp and tcp6.
func established(port int) int {
	n := 0
	hex := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(l)
			if len(fs) > 3 && strings.HasSuffix(fs[2], hex) && fs[3] == "01" {
				n++
			}
		}
	}
	return n
}

func portOf(addr string) int {
	p, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	return p
}

func write(name, text string) string {
	p := filepath.Join(tmp, name)
	check(os.WriteFile(p, []byte(text), 0o644))
	return p
}

// throngRun runs `throng run args...` in its own process, sampling it every
// period, and returns the samples and the result.
func throngRun(period time.Duration, args ...string) ([]sample, *result.Run) {
	out := filepath.Join(tmp, fmt.Sprintf("r-%d.json", time.Now().UnixNano()))
	cmd := exec.Command(bin, append(append([]string{"run"}, args...), "-q", "-o", out)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	check(cmd.Start())
	stopW := make(chan struct{})
	ss := watch(cmd.Process.Pid, period, stopW)
	// Wait, bounded: the runs of this benchmark last a few minutes at most.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Minute):
		cmd.Process.Kill()
		err = <-done
	}
	close(stopW)
	samples := <-ss
	if err != nil && stderr.Len() > 0 {
		fmt.Fprintf(os.Stderr, "throng run: %v\n%s", err, stderr.String())
	}
	run, rerr := result.ReadFile(out)
	if rerr != nil || len(run.Repetitions) == 0 {
		check(fmt.Errorf("throng run %v: no result (%v): %s", args, rerr, stderr.String()))
	}
	os.Remove(out)
	return samples, run
}

// actionOf returns a phase's summary of the named action.
func actionOf(run *result.Run, phase, name string) result.ActionSummary {
	s := result.Find(run.Repetitions[0].Summaries, phase)
	if s == nil {
		return result.ActionSummary{}
	}
	for _, a := range s.Actions {
		if a.Name == name {
			return a
		}
	}
	return result.ActionSummary{}
}

func counterPeak(run *result.Run, phase, series string) float64 {
	s := result.Find(run.Repetitions[0].Summaries, phase)
	if s == nil {
		return 0
	}
	for _, c := range s.Counters {
		if c.Source == "pubsub" {
			return c.Peak[series]
		}
	}
	return 0
}

// kb formats bytes as KB with one decimal.
func kb(b float64) string { return fmt.Sprintf("%.1f KB", b/1024) }
