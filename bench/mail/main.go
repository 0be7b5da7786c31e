// Command mail benchmarks throng's mail family on this machine and prints
// tables, each with its peer or reference measured in the same run:
//
//		go run ./bench/mail [-parts idle,smtp,population] [-users 1000,5000,10000]
//
//	  - idle: the generator's own CPU and memory per idle logged-on user at
//	    each -users count, against `throng serve mail` in its own process
//	    (a passive group: every user logged on, INBOX selected, nothing to
//	    do), then the online profile (loadsim-online's actions, real-time
//	    rates) for the same users. Targets: about 1 % of a core and at most
//	    20 KB per idle user.
//	  - smtp: send rate of throng vs Postfix's own smtp-source into Postfix ->
//	    Dovecot LMTP, same message size and parallel sessions, alternately.
//	    Target: throng/smtp-source >= 1.0.
//	  - population: APPEND rate into Dovecot with mail_fsync optimized and
//	    never, over 1 and 8 connections, and direct maildir writes.
//
// Servers come from internal/testenv (Debian packages); a part whose
// server is missing is skipped with a note. Everything runs on loopback
// and every process started is stopped.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	parts := flag.String("parts", "idle,smtp,population", "parts to run")
	users := flag.String("users", "1000,5000,10000", "idle part: user counts")
	idle := flag.Duration("idle", 40*time.Second, "idle part: measuring window after every user logged on")
	smtpN := flag.Int("smtp-messages", 2000, "smtp part: messages per tool and run")
	popUsers := flag.Int("pop-users", 20, "population part: users (100 x 25 KB messages each)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "throng-bench-mail-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "throng")
	build := exec.Command("go", "build", "-o", bin, "github.com/throng-io/throng/cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	fmt.Printf("mail benchmarks, %s, %d cores\n\n", time.Now().UTC().Format(time.RFC3339), cores())
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "idle":
			var ns []int
			for _, s := range strings.Split(*users, ",") {
				n, err := strconv.Atoi(s)
				check(err)
				ns = append(ns, n)
			}
			benchIdle(bin, dir, ns, *idle)
		case "smtp":
			benchSMTP(bin, dir, *smtpN)
		case "population":
			benchPopulation(dir, *popUsers)
		default:
			check(fmt.Errorf("unknown part %q", p))
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/mail:", err)
		os.Exit(1)
	}
}

// sample is one reading of a process.
type sample struct {
	t     time.Time
	cpu   float64 // user+system seconds
	rssKB int64
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
	return s, true
}

func cores() int {
	n := 0
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "processor") {
			n++
		}
	}
	return n
}

// serveMail starts `throng serve mail` in its own process.
func serveMail(bin string) (*exec.Cmd, string) {
	cmd := exec.Command(bin, "serve", "mail", "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	f := strings.Fields(line) // serving mail at URL (pid N); ...
	return cmd, f[3]
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// run starts `throng run file` and samples it every second until it
// exits; it returns the samples and the result file's path.
func run(bin, dir, file string, args ...string) ([]sample, string) {
	out := filepath.Join(dir, fmt.Sprintf("r-%d.json", time.Now().UnixNano()))
	cmd := exec.Command(bin, append([]string{"run", file, "-q", "-o", out}, args...)...)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var ss []sample
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "throng run: %v\n", err)
			}
			return ss, out
		case <-tick.C:
			if s, ok := read(cmd.Process.Pid); ok {
				ss = append(ss, s)
			}
		}
	}
}

// window returns the CPU (cores) and the mean RSS between from and to
// seconds after the first sample.
func window(ss []sample, from, to float64) (cpu float64, rssKB int64) {
	var a, b *sample
	var sum, n int64
	for i := range ss {
		dt := ss[i].t.Sub(ss[0].t).Seconds()
		if dt >= from && dt <= to {
			if a == nil {
				a = &ss[i]
			}
			b = &ss[i]
			sum += ss[i].rssKB
			n++
		}
	}
	if a == nil || b == a {
		return 0, 0
	}
	return (b.cpu - a.cpu) / b.t.Sub(a.t).Seconds(), sum / n
}

// actionsOf reads a result file's actions per second and errors.
func actionsOf(out string) (count, errs float64, perS float64) {
	var r struct {
		Repetitions []struct {
			Summaries []struct {
				Phase string `json:"phase"`
				Total struct {
					Count    float64 `json:"count"`
					Errors   float64 `json:"errors"`
					RatePerS float64 `json:"rate_per_s"`
				} `json:"total"`
			} `json:"summaries"`
		} `json:"repetitions"`
	}
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &r) != nil || len(r.Repetitions) == 0 {
		return 0, 0, 0
	}
	for _, s := range r.Repetitions[0].Summaries {
		if s.Phase == "steady" {
			return s.Total.Count, s.Total.Errors, s.Total.RatePerS
		}
	}
	return 0, 0, 0
}

func write(dir, name, text string) string {
	p := filepath.Join(dir, name)
	check(os.WriteFile(p, []byte(text), 0o644))
	return p
}

// benchIdle measures the generator with N idle users, then with N users
// running the online profile at real-time rates.
func benchIdle(bin, dir string, ns []int, idle time.Duration) {
	fmt.Println("## Generator per idle logged-on user (throng run vs `throng serve mail` in its own process)")
	fmt.Println()
	fmt.Println("| users | logged on in | generator RSS before / idle | KB per idle user | generator CPU idle (cores) | server RSS | online profile: actions/s, errors | generator CPU, online profile (cores) | generator RSS, online profile |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, n := range ns {
		srv, url := serveMail(bin)
		ramp := max(10, n/500) // 500 log-ons per second
		total := 3 + ramp + 5 + int(idle.Seconds())
		file := write(dir, "idle.yaml", fmt.Sprintf(`name: mail-idle
interval: 1s
counters: {system: false}
phases: {steady: %ds, drain: 5s}
mail: {population: {create: false}, timeout: 60s}
groups:
  - {name: idle, users: %d, start: 3s, ramp_up: {duration: %ds}}
`, total, n, ramp))
		ss, _ := run(bin, dir, file)
		_, base := window(ss, 0, 2.5)
		cpu, rss := window(ss, float64(3+ramp+5), float64(total))
		srvS, _ := read(srv.Process.Pid)
		// The online profile, real-time rates, the same users (they log on
		// at their first action: the engine opens sessions lazily).
		on := write(dir, "online.yaml", onlineProfile(n, ramp, int(idle.Seconds())))
		ss2, out2 := run(bin, dir, on, "--target", url)
		cpu2, rss2 := window(ss2, float64(ramp+5), float64(ramp+int(idle.Seconds())))
		cnt, errs, perS := actionsOf(out2)
		if os.Getenv("BENCH_KEEP") != "" {
			b, _ := os.ReadFile(out2)
			os.WriteFile("/tmp/bench-online.json", b, 0o644)
		}
		stop(srv)
		fmt.Printf("| %d | %ds | %.1f / %.1f MB | %.1f | %.4f (%.2f%% of a core) | %.0f MB | %.1f/s, %.0f of %.0f | %.4f | %.1f MB |\n",
			n, ramp, float64(base)/1024, float64(rss)/1024, float64(rss-base)/float64(n), cpu, 100*cpu,
			float64(srvS.rssKB)/1024, perS, errs, cnt, cpu2, float64(rss2)/1024)
	}
	fmt.Println()
}

// onlineProfile is loadsim-online's actions at real-time rates, without
// population (the standalone server creates accounts at first log-on).
func onlineProfile(n, ramp, steady int) string {
	return fmt.Sprintf(`name: mail-online-realtime
users: %d
model: open
interval: 1s
counters: {system: false}
phases: {ramp_up: {duration: %ds}, steady: %ds, drain: 10s}
mail: {mode: online, population: {create: false}, timeout: 60s}
actions:
  - {name: send, rate: 12/8h, recipients: 4}
  - {name: process-inbox, rate: 12/8h, reply: 18.6%%}
  - {name: browse, rate: 20/8h, folder: INBOX}
  - {name: free-busy, rate: 1/8h}
  - {name: meeting-request, rate: 1.4/8h}
  - {name: create-appointment, rate: 2.8/8h}
  - {name: browse-calendar, rate: 6/8h}
  - {name: poll-new-mail, kind: check, rate: 16/8h}
`, n, ramp, steady)
}

// benchSMTP compares throng's send rate with smtp-source's.
func benchSMTP(bin, dir string, msgs int) {
	fmt.Println("## SMTP submission: throng vs smtp-source (Postfix -> Dovecot LMTP, 25,000-byte messages, one recipient, connection per message)")
	fmt.Println()
	src, err := testenv.FindBinary("smtp-source", "/usr/sbin/smtp-source")
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	ctx := context.Background()
	d, err := testenv.StartDovecot(ctx, testenv.DovecotOptions{Users: 20})
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	defer d.Stop()
	p, err := testenv.StartPostfix(ctx, testenv.PostfixOptions{Dovecot: d})
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	defer p.Stop()
	os.Setenv(mail.PasswordEnv, d.Password)
	target := "imap://" + d.Addr + "?smtp=" + p.Addr
	waitQueue := func() time.Duration {
		t0 := time.Now()
		for !p.QueueEmpty() && time.Since(t0) < 2*time.Minute {
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(t0)
	}
	fmt.Println("| sessions | tool | messages | elapsed | accepted/s | then delivered after | tool CPU (s) | throng / smtp-source |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, s := range []int{4, 16} {
		var rates [2]float64
		for round := range 2 {
			// smtp-source
			t0 := time.Now()
			cmd := exec.Command(src, "-s", strconv.Itoa(s), "-l", "25000", "-m", strconv.Itoa(msgs),
				"-f", "loadgen@example.test", "-t", "user0001@example.test", p.Addr)
			check(cmd.Run())
			el := time.Since(t0)
			lag := waitQueue()
			cpuS := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			r0 := float64(msgs) / el.Seconds()
			rates[0] += r0 / 2
			fmt.Printf("| %d | smtp-source (round %d) | %d | %.2f s | %.0f | %.2f s | %.2f | |\n", s, round+1, msgs, el.Seconds(), r0, lag.Seconds(), cpuS.Seconds())
			// throng
			file := write(dir, "smtp.yaml", fmt.Sprintf(`name: mail-smtp
users: %d
interval: 1s
counters: {system: false}
closed: {iterations: %d}
phases: {drain: 60s}
mail: {population: {create: false}, timeout: 60s}
actions:
  - {name: send, to: [user0001@example.test], size: 25000B, sizes: fixed}
`, s, msgs/s))
			rcmd := exec.Command(bin, "run", file, "--target", target, "-q", "-o", filepath.Join(dir, "smtp.json"), "--engine", "goroutines")
			check(rcmd.Run())
			// The sends end where the drain starts: time them by the result,
			// not by the whole process.
			el2 := sendTime(filepath.Join(dir, "smtp.json"))
			lag2 := waitQueue()
			cpu2 := rcmd.ProcessState.UserTime() + rcmd.ProcessState.SystemTime()
			r1 := float64(msgs/s*s) / el2.Seconds()
			rates[1] += r1 / 2
			fmt.Printf("| %d | throng (round %d) | %d | %.2f s | %.0f | %.2f s | %.2f (whole run) | |\n", s, round+1, msgs/s*s, el2.Seconds(), r1, lag2.Seconds(), cpu2.Seconds())
		}
		fmt.Printf("| %d | mean of 2 rounds | | | %.0f vs %.0f | | | **%.2fx** |\n", s, rates[1], rates[0], rates[1]/rates[0])
	}
	fmt.Println()
}

// sendTime is the length of a result's load (every phase but the drain).
func sendTime(out string) time.Duration {
	var r struct {
		Repetitions []struct {
			Summaries []struct {
				Phase     string  `json:"phase"`
				DurationS float64 `json:"duration_s"`
			} `json:"summaries"`
		} `json:"repetitions"`
	}
	b, err := os.ReadFile(out)
	check(err)
	check(json.Unmarshal(b, &r))
	var all, drain float64
	for _, s := range r.Repetitions[0].Summaries {
		switch s.Phase {
		case "all":
			all = s.DurationS
		case "drain":
			drain = s.DurationS
		}
	}
	return time.Duration((all - drain) * float64(time.Second))
}

// benchPopulation measures Prepare into Dovecot.
func benchPopulation(dir string, users int) {
	fmt.Printf("## Population into Dovecot: %d users x 100 messages of 25,000 bytes (%.0f MB), maildir on this machine's disk\n\n", users, float64(users)*2.5)
	fmt.Println("| Dovecot mail_fsync | method | connections | elapsed | MB/s | messages/s |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, nofsync := range []bool{false, true} {
		d, err := testenv.StartDovecot(context.Background(), testenv.DovecotOptions{Users: users, NoFsync: nofsync})
		if err != nil {
			fmt.Println("skipped:", err)
			return
		}
		mode := map[bool]string{false: "optimized", true: "never"}[nofsync]
		for _, m := range []struct {
			par     int
			maildir bool
		}{{1, false}, {8, false}, {8, true}} {
			block := fmt.Sprintf("population: {inbox: 100, deleted: 0, folders: 0, size: 25KB, sizes: fixed, calendar: 0, contacts: 0, parallel: %d", m.par)
			if m.maildir {
				block += ", maildir: " + d.MailDir + "/%u/Maildir, maildir_owner: \"5000:5000\""
			}
			block += "}\npassword: \"${file:" + d.Dir + "/password}\""
			st := populate(d, users, block)
			method := "IMAP APPEND (LITERAL+, pipelined)"
			if m.maildir {
				method = "maildir files (no fsync by throng)"
			}
			fmt.Printf("| %s | %s | %d | %.2f s | %.1f | %.0f |\n", mode, method, m.par, st.Elapsed.Seconds(), st.MBps(),
				float64(st.Messages)/st.Elapsed.Seconds())
		}
		d.Stop()
	}
	fmt.Println()
}

func populate(d *testenv.DovecotServer, users int, block string) mail.PopulationStats {
	src := "users: 1\nmail:\n  " + strings.ReplaceAll(block, "\n", "\n  ") + "\nactions: [{name: check}]\n"
	s, err := scenario.Parse("bench.yaml", []byte(src), []string{"web", mail.Name})
	check(err)
	c, errs := mail.Decode(s.DriverConfig, "imap://"+d.Addr+"?smtp=127.0.0.1:9")
	if len(errs) > 0 {
		check(errs[0])
	}
	c.SetLog(func(string) {})
	ids := make([]int, users)
	for i := range ids {
		ids[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	check(c.Prepare(ctx, driver.Population{TotalUsers: users, Users: ids, Seed: 3}))
	return c.Stats()
}
