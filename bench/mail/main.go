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
//	    Dovecot LMTP, same message size and parallel sessions (-smtp-sessions),
//	    in an order that rotates every round, servers on tmpfs unless
//	    -smtp-disk. Target: throng/smtp-source >= 1.0. With -baseline BIN
//	    another throng binary (a build before a change) runs in the same
//	    rotation, both engines, and a table gives this build / it.
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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	parts := flag.String("parts", "idle,smtp,population", "parts to run")
	users := flag.String("users", "1000,5000,10000", "idle part: user counts")
	idle := flag.Duration("idle", 40*time.Second, "idle part: measuring window after every user logged on")
	interval := flag.Duration("interval", 5*time.Second, "idle part: the runs' interval (loadsim-online's is 5s; the generator reads its own /proc/self/fd once per interval)")
	smtpN := flag.Int("smtp-messages", 2000, "smtp part: messages per tool and run")
	smtpSessions := flag.String("smtp-sessions", "4,16", "smtp part: parallel sessions (one comparison each)")
	smtpDisk := flag.Bool("smtp-disk", false, "smtp part: keep Postfix's queue and Dovecot's mailboxes on this machine's disk instead of tmpfs (/dev/shm)")
	smtpLogon := flag.Bool("smtp-logon", false, "smtp part: throng's senders also log on to IMAP (target imap://...?smtp=...) instead of submitting only (smtp://)")
	popUsers := flag.Int("pop-users", 20, "population part: users (100 x 25 KB messages each)")
	dovecotN := flag.String("dovecot-sessions", "1000,2000,4000", "dovecot part: IMAP sessions to open")
	rounds := flag.Int("rounds", 3, "smtp and population parts: rounds (medians are quoted)")
	baseline := flag.String("baseline", "", "smtp part: another throng binary to run in the same rotation (an A/B of two builds)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "throng-bench-mail-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "throng")
	build := exec.Command("go", "build", "-o", bin, "github.com/throng-io/throng/cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	fmt.Printf("mail benchmarks, %s, %d cores\n\n", time.Now().UTC().Format(time.RFC3339), benchkit.Cores())
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "idle":
			benchIdle(bin, dir, ints(*users), *idle, *interval)
		case "smtp":
			benchSMTP(bin, *baseline, dir, ints(*smtpSessions), *smtpN, *rounds, *smtpLogon, *smtpDisk)
		case "dovecot":
			benchDovecot(bin, dir, ints(*dovecotN))
		case "population":
			benchPopulation(dir, *popUsers, *rounds)
		default:
			check(fmt.Errorf("unknown part %q", p))
		}
	}
}

// ints reads a comma-separated list of numbers (a flag's value).
func ints(list string) []int {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		check(err)
		ns = append(ns, n)
	}
	return ns
}

// locked runs f holding the benchmarks' lock (benchkit.Locked).
func locked(f func()) { check(benchkit.Locked("bench/mail", f)) }

// servers are stopped by check before it exits.
var servers []interface{ Stop() error }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/mail:", err)
		for _, s := range servers {
			s.Stop()
		}
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
					Count    float64           `json:"count"`
					Errors   float64           `json:"errors"`
					RatePerS float64           `json:"rate_per_s"`
					Classes  map[string]uint64 `json:"errors_by_class"`
					Messages map[string]string `json:"messages"`
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
			for c, n := range s.Total.Classes {
				if c == "skipped" { // not attempted (no CalDAV server), not an error
					continue
				}
				fmt.Fprintf(os.Stderr, "bench/mail: %s: %d errors of class %s: %s\n", out, n, c, s.Total.Messages[c])
			}
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
func benchIdle(bin, dir string, ns []int, idle, interval time.Duration) {
	fmt.Println("## Generator per idle logged-on user (throng run vs `throng serve mail` in its own process)")
	fmt.Println()
	fmt.Printf("Interval %s. Idle: a passive group, every user logged on (LOGIN, SELECT INBOX), %s measured after the ramp. Online: loadsim-online's actions at real-time rates (about 74 per user per 8 h), the same users logged on during the ramp, the same window.\n\n", interval, idle)
	fmt.Println("| users | log-on ramp | generator RSS before / idle | KB per idle user | generator CPU, idle (cores) | server RSS | online: steady actions/s, errors | generator CPU, online (cores) | generator RSS, online | KB per online user |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range ns {
		locked(func() { idleOne(bin, dir, n, idle, interval) })
	}
	fmt.Println()
}

// idleOne measures n users: idle, then the online profile.
func idleOne(bin, dir string, n int, idle, interval time.Duration) {
	{
		srv, url := serveMail(bin)
		ramp := max(10, n/500) // 500 log-ons per second
		total := 3 + ramp + 5 + int(idle.Seconds())
		file := write(dir, "idle.yaml", fmt.Sprintf(`name: mail-idle
interval: %s
counters: {system: false}
phases: {steady: %ds, drain: 5s}
mail: {population: {create: false}, timeout: 60s}
groups:
  - {name: idle, users: %d, start: 3s, ramp_up: {duration: %ds}}
`, interval, total, n, ramp))
		ss, _ := run(bin, dir, file, "--target", url)
		_, base := window(ss, 0, 2.5)
		cpu, rss := window(ss, float64(3+ramp+5), float64(total))
		srvS, _ := read(srv.Process.Pid)
		// The online profile, real-time rates, the same users, all logged
		// on during the ramp (mail's driver.LogonAtStart).
		on := write(dir, "online.yaml", onlineProfile(n, ramp, int(idle.Seconds()), interval))
		ss2, out2 := run(bin, dir, on, "--target", url)
		cpu2, rss2 := window(ss2, float64(ramp+5), float64(ramp+int(idle.Seconds())))
		cnt, errs, perS := actionsOf(out2)
		if os.Getenv("BENCH_KEEP") != "" {
			b, _ := os.ReadFile(out2)
			os.WriteFile("/tmp/bench-online.json", b, 0o644)
		}
		stop(srv)
		fmt.Printf("| %d | %ds | %.1f / %.1f MB | %.1f | %.4f (%.2f%% of a core) | %.0f MB | %.2f/s, %.0f errors of %.0f | %.4f (%.2f%% of a core) | %.1f MB | %.1f |\n",
			n, ramp, float64(base)/1024, float64(rss)/1024, float64(rss-base)/float64(n), cpu, 100*cpu,
			float64(srvS.rssKB)/1024, perS, errs, cnt, cpu2, 100*cpu2, float64(rss2)/1024, float64(rss2-base)/float64(n))
	}
}

// onlineProfile is loadsim-online's actions at real-time rates, without
// population (the standalone server creates accounts at first log-on).
func onlineProfile(n, ramp, steady int, interval time.Duration) string {
	return fmt.Sprintf(`name: mail-online-realtime
users: %d
model: open
interval: %s
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
`, n, interval, ramp, steady)
}

// benchSMTP compares throng's send rate with smtp-source's. Every round
// runs smtp-source, throng, smtp-source -F (one of throng's messages, so
// that Postfix's work per message is the same as for throng's) and throng
// with smtp_engine goroutines (what the submission loop gains), one after
// the other in an order that rotates from round to round, each after
// Postfix emptied its queue. A warm-up run of throng, not counted, starts
// Postfix's processes and gives the message for -F.
//
// Unless disk, the servers keep their queue and mailboxes on tmpfs
// (/dev/shm): on this shared VM's disk the writeback of one run's 50 MB
// of queue files and maildir landed in a later run and made rounds swing
// by ±15 %, most against whichever tool ran next.
func benchSMTP(bin, baseline, dir string, sessions []int, msgs, rounds int, logon, disk bool) {
	where := "queue and maildirs on tmpfs"
	if disk {
		where = "queue and maildirs on this machine's disk"
	}
	fmt.Printf("## SMTP submission: throng vs smtp-source (Postfix -> Dovecot LMTP, 25,000-byte messages, one recipient, a connection per message, %s)\n\n", where)
	src, err := testenv.FindBinary("smtp-source", "/usr/sbin/smtp-source")
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	if !disk {
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			old, had := os.LookupEnv("TMPDIR")
			os.Setenv("TMPDIR", "/dev/shm")
			if had {
				defer os.Setenv("TMPDIR", old)
			} else {
				defer os.Unsetenv("TMPDIR")
			}
		} else {
			fmt.Println("(no /dev/shm: on disk)")
		}
	}
	ctx := context.Background()
	// Accounts from 41 on receive, a fresh one for every run (a mailbox
	// that already holds thousands of messages takes longer to deliver
	// into); throng's senders are 21..36 (with -smtp-logon they log on:
	// empty mailboxes cost Dovecot little).
	runs := 1 + 6*rounds*len(sessions) // a warm-up, then 4 tools a round (6 with a baseline)
	d, err := testenv.StartDovecot(ctx, testenv.DovecotOptions{Users: 40 + runs, NoFsync: true})
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	defer d.Stop()
	servers = append(servers, d)
	p, err := testenv.StartPostfix(ctx, testenv.PostfixOptions{Dovecot: d})
	if err != nil {
		fmt.Println("skipped:", err)
		return
	}
	defer p.Stop()
	servers = append(servers, p)
	os.Setenv(mail.PasswordEnv, d.Password)
	// smtp://: submission only, as smtp-source; imap://: the senders are
	// also logged on to Dovecot (their log-on storm falls in the window).
	target := "smtp://" + p.Addr
	if logon {
		target = "imap://" + d.Addr + "?smtp=" + p.Addr
	}
	// waitQueue waits for Postfix to have delivered everything, then a
	// second more for the delivery agents to settle, so that one tool's
	// deliveries do not load the next tool's run.
	waitQueue := func() time.Duration {
		t0 := time.Now()
		for !p.QueueEmpty() && time.Since(t0) < 2*time.Minute {
			time.Sleep(20 * time.Millisecond)
		}
		el := time.Since(t0)
		time.Sleep(time.Second)
		return el
	}
	rcpt := 0
	next := func() string { rcpt++; return fmt.Sprintf("user%04d@example.test", 40+rcpt) }
	// A tool's run: accepted messages per second, its CPU (user + system)
	// in µs per message, and what to print.
	type measured struct {
		rate, delivered, cpuUs float64 // accepted/s, delivered/s (until the queue was empty)
		line                   string
	}
	source := func(s int, args ...string) measured {
		cmd := exec.Command(src, append(append([]string{"-s", strconv.Itoa(s)}, args...),
			"-m", strconv.Itoa(msgs), "-f", "loadgen@example.test", "-t", next(), p.Addr)...)
		var el, lag time.Duration
		locked(func() {
			t0 := time.Now()
			check(cmd.Run())
			el = time.Since(t0)
			lag = waitQueue()
		})
		cpuS := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		r := float64(msgs) / el.Seconds()
		return measured{r, float64(msgs) / (el + lag).Seconds(), cpuS / float64(msgs) * 1e6,
			fmt.Sprintf("%d | %.2f s | %.0f | %.2f s | %.2f", msgs, el.Seconds(), r, lag.Seconds(), cpuS)}
	}
	// throng: a closed run, one session per user, back to back, the count
	// shared as smtp-source shares -m.
	throng := func(bin string, s, n int, engine string) measured {
		file := write(dir, "smtp.yaml", fmt.Sprintf(`name: mail-smtp
users: %d
interval: 1s
counters: {system: false}
closed: {total: %d}
phases: {drain: 60s}
mail: {timeout: 60s, first_user: 21, smtp_engine: %s}
actions:
  - {name: send, to: [%s], size: 25000B, sizes: fixed}
`, s, n, engine, next()))
		out := filepath.Join(dir, "smtp.json")
		cmd := exec.Command(bin, "run", file, "--target", target, "-q", "-o", out, "--engine", "goroutines")
		var lag time.Duration
		locked(func() {
			check(cmd.Run())
			lag = waitQueue()
		})
		// The sends end where the drain starts: time them by the result,
		// not by the whole process.
		el, sent, errs := sendTime(out)
		cpuS := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		r := float64(sent) / el.Seconds()
		return measured{r, float64(sent) / (el + lag).Seconds(), cpuS / float64(sent) * 1e6,
			fmt.Sprintf("%d (%d errors) | %.2f s | %.0f | %.2f s | %.2f (whole run)", sent, errs, el.Seconds(), r, lag.Seconds(), cpuS)}
	}
	throng(bin, sessions[0], 200, "epoll") // warm-up
	// smtp-source -F sends one of the messages throng sent (as Dovecot
	// stored it), so the server's work per message is the same for both.
	eml := sampleMessage(d.MailDir, dir)
	type tool struct {
		name string
		run  func(s int) measured
	}
	tools := []tool{
		{"smtp-source", func(s int) measured { return source(s, "-l", "24800") }}, // -l is the body; its headers add about 200 bytes
		{"throng", func(s int) measured { return throng(bin, s, msgs, "epoll") }},
		{"smtp-source -F (throng's message)", func(s int) measured { return source(s, "-F", eml) }},
		{"throng smtp_engine goroutines", func(s int) measured { return throng(bin, s, msgs, "goroutines") }},
	}
	if eml == "" {
		tools = slices.Delete(tools, 2, 3)
	}
	g := len(tools) - 1 // throng with the goroutine engine
	if baseline != "" {
		tools = append(tools,
			tool{"baseline throng", func(s int) measured { return throng(baseline, s, msgs, "epoll") }},
			tool{"baseline throng smtp_engine goroutines", func(s int) measured { return throng(baseline, s, msgs, "goroutines") }})
	}
	var vsBaseline []string
	fmt.Println("| sessions | round | tool | messages | elapsed | accepted/s | queue empty after | tool CPU (s) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var summary []string
	for _, s := range sessions {
		rate := make([][]float64, len(tools)) // [tool][round]
		delivered := make([][]float64, len(tools))
		cpu := make([][]float64, len(tools))
		for round := range rounds {
			for i := range tools {
				k := (i + round) % len(tools)
				m := tools[k].run(s)
				rate[k], cpu[k] = append(rate[k], m.rate), append(cpu[k], m.cpuUs)
				delivered[k] = append(delivered[k], m.delivered)
				fmt.Printf("| %d | %d | %s | %s |\n", s, round+1, tools[k].name, m.line)
			}
		}
		// Each round's ratio first (the tools ran minutes apart at most),
		// then the ratio of the medians.
		ratios := func(x [][]float64, k int) string {
			var rr []float64
			for r := range x[1] {
				rr = append(rr, x[1][r]/x[k][r])
			}
			return fmt.Sprintf("**%.2fx** (%.2fx)", benchkit.Median(rr), benchkit.Median(x[1])/benchkit.Median(x[k]))
		}
		l := fmt.Sprintf("| %d | %d | %.0f | %.0f | %s | %.0f | %.0f |", s, rounds,
			benchkit.Median(rate[1]), benchkit.Median(rate[0]), ratios(rate, 0), benchkit.Median(cpu[1]), benchkit.Median(cpu[0]))
		if eml != "" {
			l += fmt.Sprintf(" %.0f | %s |", benchkit.Median(rate[2]), ratios(rate, 2))
		} else {
			l += " – | – |"
		}
		l += fmt.Sprintf(" %.0f / %.0f | %s |", benchkit.Median(delivered[1]), benchkit.Median(delivered[0]), ratios(delivered, 0))
		l += fmt.Sprintf(" %.0f | %.0f | %s |", benchkit.Median(rate[g]), benchkit.Median(cpu[g]), ratios(rate, g))
		summary = append(summary, l)
		if baseline != "" {
			b := g + 1
			// This build over the baseline, each engine: rates of the same
			// round, and each one's ratio to smtp-source.
			versus := func(x [][]float64, k, kb int) string {
				var rr []float64
				for r := range x[k] {
					rr = append(rr, x[k][r]/x[kb][r])
				}
				return fmt.Sprintf("**%.2fx** (%.2f-%.2fx)", benchkit.Median(rr), slices.Min(rr), slices.Max(rr))
			}
			toSource := func(k int) string {
				var rr []float64
				for r := range rate[k] {
					rr = append(rr, rate[k][r]/rate[0][r])
				}
				return fmt.Sprintf("%.2fx (%.2f-%.2fx)", benchkit.Median(rr), slices.Min(rr), slices.Max(rr))
			}
			for _, e := range []struct {
				name  string
				k, kb int
			}{{"epoll", 1, b}, {"goroutines", g, b + 1}} {
				vsBaseline = append(vsBaseline, fmt.Sprintf("| %d | %s | %d | %.0f | %.0f | %s | %s | %s | %.0f | %.0f | %s |", s, e.name, rounds,
					benchkit.Median(rate[e.k]), benchkit.Median(rate[e.kb]), versus(rate, e.k, e.kb),
					toSource(e.k), toSource(e.kb), benchkit.Median(cpu[e.k]), benchkit.Median(cpu[e.kb]), versus(cpu, e.k, e.kb)))
			}
		}
	}
	fmt.Println()
	fmt.Println("Medians over the rounds; a ratio is the median of the rounds' ratios, the ratio of the medians in brackets. Delivered/s: messages over the time until Postfix's queue was empty (acceptance and delivery share the machine).")
	fmt.Println()
	fmt.Println("| sessions | rounds | throng accepted/s | smtp-source accepted/s | throng / smtp-source | throng CPU µs/message | smtp-source CPU µs/message | smtp-source -F accepted/s | throng / smtp-source -F | delivered/s throng / smtp-source | delivered ratio | throng goroutines accepted/s | its CPU µs/message | throng epoll / goroutines |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range summary {
		fmt.Println(l)
	}
	fmt.Println()
	if len(vsBaseline) > 0 {
		fmt.Printf("This build against -baseline %s, in the same rotation: medians, and the median (min-max) of the rounds' ratios.\n\n", baseline)
		fmt.Println("| sessions | smtp_engine | rounds | accepted/s | baseline accepted/s | this / baseline | this / smtp-source | baseline / smtp-source | CPU µs/message | baseline CPU µs/message | CPU this / baseline |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
		for _, l := range vsBaseline {
			fmt.Println(l)
		}
		fmt.Println()
	}
}

// sampleMessage copies one message Dovecot stored under mailDir to
// dir/sample.eml with LF line ends (smtp-source -F adds the CRLF), less the
// headers the delivery added (Return-Path, Delivered-To, Received), and
// returns its path; "" when there is none.
func sampleMessage(mailDir, dir string) string {
	files, _ := filepath.Glob(filepath.Join(mailDir, "user*", "Maildir", "new", "*"))
	more, _ := filepath.Glob(filepath.Join(mailDir, "user*", "Maildir", "cur", "*"))
	files = append(files, more...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 20000 {
			continue
		}
		text := strings.ReplaceAll(string(b), "\r\n", "\n")
		head, body, ok := strings.Cut(text, "\n\n")
		if !ok {
			continue
		}
		var keep []string
		skip := false
		for _, l := range strings.Split(head, "\n") {
			if l != "" && (l[0] == ' ' || l[0] == '\t') {
				if !skip {
					keep = append(keep, l)
				}
				continue
			}
			name, _, _ := strings.Cut(l, ":")
			switch strings.ToLower(name) {
			case "return-path", "delivered-to", "received":
				skip = true
			default:
				skip = false
				keep = append(keep, l)
			}
		}
		out := filepath.Join(dir, "sample.eml")
		check(os.WriteFile(out, []byte(strings.Join(keep, "\n")+"\n\n"+body), 0o644))
		return out
	}
	return ""
}

// sendTime is the length of a result's load (every phase but the drain),
// and the sends it counted and their errors.
func sendTime(out string) (time.Duration, int, int) {
	var r struct {
		Repetitions []struct {
			Summaries []struct {
				Phase     string  `json:"phase"`
				DurationS float64 `json:"duration_s"`
				Actions   []struct {
					Name   string `json:"name"`
					Count  int    `json:"count"`
					Errors int    `json:"errors"`
				} `json:"actions"`
			} `json:"summaries"`
		} `json:"repetitions"`
	}
	b, err := os.ReadFile(out)
	check(err)
	check(json.Unmarshal(b, &r))
	var all, drain float64
	sent, errs := 0, 0
	for _, s := range r.Repetitions[0].Summaries {
		switch s.Phase {
		case "all":
			all = s.DurationS
			for _, a := range s.Actions {
				if a.Name == "send" {
					sent, errs = a.Count, a.Errors
				}
			}
		case "drain":
			drain = s.DurationS
		default:
			for _, a := range s.Actions {
				if a.Name == "send" {
					fmt.Fprintf(os.Stderr, "bench/mail: %s: phase %s %.2f s, %d sends\n", filepath.Base(out), s.Phase, s.DurationS, a.Count)
				}
			}
		}
	}
	return time.Duration((all - drain) * float64(time.Second)), sent, errs
}

// benchPopulation measures Prepare into Dovecot, rounds times each way.
func benchPopulation(dir string, users, rounds int) {
	fmt.Printf("## Population into Dovecot: %d users x 100 messages of 25,000 bytes (%.0f MB), maildir on this machine's disk\n\n", users, float64(users)*2.5)
	fmt.Println("| Dovecot mail_fsync | method | connections | rounds | elapsed (median) | MB/s (median) | MB/s (each round) | messages/s (median) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, nofsync := range []bool{false, true} {
		d, err := testenv.StartDovecot(context.Background(), testenv.DovecotOptions{Users: users, NoFsync: nofsync})
		if err != nil {
			fmt.Println("skipped:", err)
			return
		}
		servers = append(servers, d)
		mode := map[bool]string{false: "optimized", true: "never"}[nofsync]
		for _, m := range []struct {
			par     int
			maildir bool
		}{{1, false}, {8, false}, {8, true}} {
			if m.maildir && nofsync {
				continue // Dovecot's fsync setting plays no part
			}
			block := fmt.Sprintf("population: {inbox: 100, deleted: 0, folders: 0, size: 25KB, sizes: fixed, calendar: 0, contacts: 0, parallel: %d", m.par)
			if m.maildir {
				owner := fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid())
				if os.Geteuid() == 0 {
					owner = fmt.Sprintf("%d:%d", testenv.DovecotMailUID, testenv.DovecotMailUID)
				}
				block += ", maildir: " + d.MailDir + "/%u/Maildir, maildir_owner: \"" + owner + "\""
			}
			block += "}\npassword: \"${file:" + d.Dir + "/password}\""
			var mbps, els, mps []float64
			var each []string
			for range rounds {
				var st mail.PopulationStats
				locked(func() { st = populate(d, users, block) })
				mbps = append(mbps, st.MBps())
				els = append(els, st.Elapsed.Seconds())
				mps = append(mps, float64(st.Messages)/st.Elapsed.Seconds())
				each = append(each, fmt.Sprintf("%.1f", st.MBps()))
			}
			method := "IMAP APPEND (LITERAL+, pipelined)"
			if m.maildir {
				mode, method = "(not involved)", "maildir files (no fsync by throng)"
			}
			fmt.Printf("| %s | %s | %d | %d | %.2f s | %.1f | %s | %.0f |\n", mode, method, m.par, rounds, benchkit.Median(els), benchkit.Median(mbps),
				strings.Join(each, ", "), benchkit.Median(mps))
		}
		d.Stop()
	}
	fmt.Println()
}

func populate(d *testenv.DovecotServer, users int, block string) mail.PopulationStats {
	src := "users: 1\nphases: {steady: 1s}\nmail:\n  " + strings.ReplaceAll(block, "\n", "\n  ") + "\nactions: [{name: check}]\n"
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

// imapProcesses counts Dovecot's imap processes (children of master) and
// sums their proportional set size (shared pages divided among them).
func imapProcesses(master int) (n int, pssKB int64) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		st := string(b)
		i, j := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if i < 0 || j < 0 || st[i+1:j] != "imap" {
			continue
		}
		f := strings.Fields(st[j+2:])
		if ppid, _ := strconv.Atoi(f[1]); ppid != master {
			continue
		}
		n++
		r, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		for _, l := range strings.Split(string(r), "\n") {
			if strings.HasPrefix(l, "Pss:") {
				v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
				pssKB += v
			}
		}
	}
	return n, pssKB
}

// memAvailableKB is MemAvailable from /proc/meminfo.
func memAvailableKB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemAvailable:") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

// benchDovecot opens n idle IMAP sessions (LOGIN + SELECT INBOX, one
// account each) against Dovecot's scale configuration and counts what it
// carries: imap processes, their memory, the machine's memory used.
func benchDovecot(bin, dir string, ns []int) {
	fmt.Println("## IMAP sessions Dovecot carries on this machine (one imap process per session; process_limit 5000)")
	fmt.Println()
	fmt.Println("| sessions asked | opened at | imap processes | log-on time | imap PSS total | PSS per session | machine memory used by the run | per session |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, n := range ns {
		locked(func() {
			d, err := testenv.StartDovecot(context.Background(), testenv.DovecotOptions{Users: n})
			if err != nil {
				fmt.Println("skipped:", err)
				return
			}
			defer d.Stop()
			servers = append(servers, d)
			os.Setenv(mail.PasswordEnv, d.Password)
			mem0 := memAvailableKB()
			ramp := max(5, n/200)
			hold := ramp + 40
			file := write(dir, "dovecot.yaml", fmt.Sprintf(`name: dovecot-sessions
interval: 1s
counters: {system: false}
phases: {steady: %ds, drain: 1s}
mail: {population: {create: false}, timeout: 60s}
groups:
  - {name: idle, users: %d, start: 1s, ramp_up: {duration: %ds}}
`, hold, n, ramp))
			cmd := exec.Command(bin, "run", file, "--target", "imap://"+d.Addr+"?smtp="+d.LMTPAddr, "-q", "-o", filepath.Join(dir, "dovecot.json"))
			cmd.Stderr = os.Stderr
			check(cmd.Start())
			t0 := time.Now()
			full := time.Duration(0)
			var procs int
			var pss int64
			var used int64
			for time.Since(t0) < time.Duration(hold-5)*time.Second {
				time.Sleep(time.Second)
				p, _ := imapProcesses(d.PID)
				if p >= n && full == 0 {
					full = time.Since(t0) - time.Second // the group starts after 1 s
				}
				if p >= n || time.Since(t0) > time.Duration(ramp+20)*time.Second {
					procs, pss = imapProcesses(d.PID)
					used = mem0 - memAvailableKB()
					break
				}
			}
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
			ft := "not all"
			if full > 0 {
				ft = fmt.Sprintf("%.1f s", full.Seconds())
			}
			fmt.Printf("| %d | %d/s | %d | %s | %.0f MB | %.0f KB | %.0f MB | %.0f KB |\n", n, n/ramp, procs, ft,
				float64(pss)/1024, float64(pss)/float64(max(procs, 1)), float64(used)/1024, float64(used)/float64(max(procs, 1)))
		})
	}
	fmt.Println()
}
