// Command netloop compares the engine's event loops (internal/engine/netloop)
// with wrk on the same server, in requests per client CPU-second.
//
//	go run ./bench/netloop -url http://127.0.0.1:PORT [-path /one.html]
//	    [-c 10,50] [-d 10s] [-rounds 3] [-kinds epoll,io_uring] [-nginx PID]
//
// Each round runs, for every connection count N, "wrk -t1 -cN -dD" and then
// one loop kind, then wrk again and the next kind: every loop run is
// compared with the wrk run just before it. Every client runs as a child
// process and its CPU is the child's rusage (user + system), so both are
// measured the same way. The loop run is this program again with -run: a
// closed model of N users without think time on one loop thread, for D.
// With -nginx (the master's PID) the CPU of its workers is shown too.
//
// The output is one line per run and a summary of the median ratios
// (loop req per CPU-s / wrk req per CPU-s) per kind and N.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/engine/netloop"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

func main() {
	url := flag.String("url", "", "base URL of the server, like http://127.0.0.1:8080")
	path := flag.String("path", "/one.html", "path requested")
	conns := flag.String("c", "10,50", "connection counts, comma-separated")
	dur := flag.Duration("d", 10*time.Second, "duration of each run")
	rounds := flag.Int("rounds", 3, "rounds")
	kinds := flag.String("kinds", "epoll,io_uring", "loop kinds, comma-separated")
	wrk := flag.String("wrk", "wrk", "wrk binary")
	nginx := flag.Int("nginx", 0, "PID of the nginx master, to show its workers' CPU")
	runKind := flag.String("run", "", "internal: run one loop of this kind and print its figures")
	n := flag.Int("n", 10, "internal: connections of the -run loop")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "netloop: -url is required")
		os.Exit(2)
	}
	if *runKind != "" {
		if err := runLoop(*runKind, *url, *path, *n, *dur); err != nil {
			fmt.Fprintln(os.Stderr, "netloop:", err)
			os.Exit(1)
		}
		return
	}
	if err := compare(*url, *path, *wrk, split(*conns), split(*kinds), *dur, *rounds, *nginx); err != nil {
		fmt.Fprintln(os.Stderr, "netloop:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// result is one client run.
type result struct {
	client    string
	conns     string
	requests  int64
	errors    int64
	elapsed   time.Duration
	user, sys time.Duration
	serverCPU time.Duration // nginx workers, when known
	csw       int64         // client context switches (voluntary + involuntary)
	serverCSW int64         // nginx workers' context switches, when known
}

func (r result) cpu() time.Duration { return r.user + r.sys }

func (r result) perCPU() float64 { return float64(r.requests) / r.cpu().Seconds() }

func compare(url, path, wrk string, conns, kinds []string, d time.Duration, rounds, nginx int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ratios := map[string][]float64{}
	fmt.Printf("%-5s %-9s %5s %10s %9s %7s %7s %9s %9s %6s %8s %6s %7s\n",
		"round", "client", "conns", "requests", "req/s", "user s", "sys s", "µs CPU/rq", "req/CPU-s", "csw/rq", "nginx µs", "ng csw", "ratio")
	for round := 1; round <= rounds; round++ {
		for _, c := range conns {
			for _, kind := range kinds {
				w, err := measure(nginx, "wrk", c, func() *exec.Cmd {
					return exec.Command(wrk, "-t1", "-c"+c, "-d"+strconv.Itoa(int(d.Seconds()))+"s", url+path)
				}, parseWrk)
				if err != nil {
					return err
				}
				show(round, w, 0)
				l, err := measure(nginx, kind, c, func() *exec.Cmd {
					return exec.Command(self, "-run", kind, "-url", url, "-path", path, "-n", c, "-d", d.String())
				}, parseLoop)
				if err != nil {
					return err
				}
				ratio := l.perCPU() / w.perCPU()
				show(round, l, ratio)
				key := kind + " c=" + c
				ratios[key] = append(ratios[key], ratio)
			}
		}
	}
	fmt.Println()
	var keys []string
	for k := range ratios {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rs := append([]float64(nil), ratios[k]...)
		sort.Float64s(rs)
		fmt.Printf("%-16s median ratio %.2f  [%.2f-%.2f]  rounds %d  %v\n", k, rs[len(rs)/2], rs[0], rs[len(rs)-1], len(rs), fmtRatios(ratios[k]))
	}
	return nil
}

func fmtRatios(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.2f", r))
	}
	return strings.Join(s, " ")
}

func show(round int, r result, ratio float64) {
	rs := "-"
	if ratio > 0 {
		rs = fmt.Sprintf("%.2f", ratio)
	}
	ng, ngcsw := "-", "-"
	if r.serverCPU > 0 && r.requests > 0 {
		ng = fmt.Sprintf("%.2f", float64(r.serverCPU.Microseconds())/float64(r.requests))
		ngcsw = fmt.Sprintf("%.3f", float64(r.serverCSW)/float64(r.requests))
	}
	errs := ""
	if r.errors > 0 {
		errs = fmt.Sprintf("  (%d errors)", r.errors)
	}
	fmt.Printf("%-5d %-9s %5s %10d %9.0f %7.2f %7.2f %9.2f %9.0f %6.3f %8s %6s %7s%s\n",
		round, r.client, r.conns, r.requests, float64(r.requests)/r.elapsed.Seconds(),
		r.user.Seconds(), r.sys.Seconds(), float64(r.cpu().Microseconds())/float64(r.requests), r.perCPU(),
		float64(r.csw)/float64(r.requests), ng, ngcsw, rs, errs)
}

// measure runs one client as a child and takes its CPU from its rusage.
func measure(nginx int, client, conns string, cmd func() *exec.Cmd, parse func(string, *result) error) (result, error) {
	r := result{client: client, conns: conns}
	c := cmd()
	c.Stderr = os.Stderr
	before, beforeCSW := workers(nginx)
	start := time.Now()
	out, err := c.Output()
	r.elapsed = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("%s: %w", client, err)
	}
	after, afterCSW := workers(nginx)
	r.serverCPU, r.serverCSW = after-before, afterCSW-beforeCSW
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	r.csw = ru.Nvcsw + ru.Nivcsw
	r.user = time.Duration(syscall.TimevalToNsec(ru.Utime))
	r.sys = time.Duration(syscall.TimevalToNsec(ru.Stime))
	if err := parse(string(out), &r); err != nil {
		return r, fmt.Errorf("%s: %w\n%s", client, err, out)
	}
	return r, nil
}

var (
	wrkCount = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(\w+)`)
	wrkErrs  = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func parseWrk(out string, r *result) error {
	m := wrkCount.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("no request count in wrk's output")
	}
	r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	if d, err := time.ParseDuration(m[2] + m[3]); err == nil {
		r.elapsed = d
	}
	for _, e := range wrkErrs.FindAllStringSubmatch(out, -1) {
		for _, f := range e[1:] {
			n, _ := strconv.ParseInt(f, 10, 64)
			r.errors += n
		}
	}
	return nil
}

func parseLoop(out string, r *result) error {
	var secs float64
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "requests %d errors %d seconds %g", &r.requests, &r.errors, &secs); err != nil {
		return fmt.Errorf("unexpected output")
	}
	r.elapsed = time.Duration(secs * float64(time.Second))
	return nil
}

// workers returns the CPU time and the context switches so far of the
// children of pid (nginx's workers).
func workers(pid int) (cpu time.Duration, csw int64) {
	if pid <= 0 {
		return 0, 0
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(s[i+1:])
		// Fields after the command, from 0: state ppid ... utime (11) stime (12).
		if len(fs) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(fs[1]); ppid != pid {
			continue
		}
		ut, _ := strconv.ParseInt(fs[11], 10, 64)
		st, _ := strconv.ParseInt(fs[12], 10, 64)
		cpu += time.Duration(ut+st) * time.Second / 100 // CLK_TCK 100
		status, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				csw += n
			}
		}
	}
	return cpu, csw
}

// runLoop is the child: N closed-loop users without think time on one loop
// thread for d, then one line of figures on stdout.
func runLoop(kind, url, path string, n int, d time.Duration) error {
	src := fmt.Sprintf(`
users: %d
interval: 1s
phases: {steady: %s}
engine: {kind: %s, threads: 1}
actions: [{path: %q}]
`, n, scenario.Duration(d), kind, path)
	s, err := scenario.Parse("bench.yaml", []byte(src), []string{web.Name})
	if err != nil {
		return err
	}
	p, err := plan.Compile(s, plan.Whole)
	if err != nil {
		return err
	}
	wc, errs := web.Decode(s.DriverConfig, url)
	if len(errs) > 0 {
		return errs[0]
	}
	addr, _ := wc.WireAddr()
	cfg := netloop.Config{
		Kind: kind, Threads: 1, Addr: addr, KeepAlive: wc.WireKeepAlive(), Timeout: wc.WireTimeout(),
		NewParser: wc.NewWireParser,
	}
	for _, a := range s.Actions {
		ca, errs := wc.Compile(a)
		if len(errs) > 0 {
			return errs[0]
		}
		cfg.Actions = append(cfg.Actions, ca)
		cfg.Requests = append(cfg.Requests, ca.(driver.WireAction).WireRequest())
	}
	rec := metrics.NewRecorder(len(p.Actions), nil)
	base := time.Now()
	nop := func() {}
	err = netloop.Run(context.Background(), p, cfg, netloop.Hooks{
		Now:       func() time.Duration { return time.Since(base) },
		Recorders: []*metrics.Recorder{rec},
		Started:   nop, Stopped: func(bool) {}, ConnOpened: nop, ConnClosed: nop,
		Thread: func(int) {}, Aborted: nop,
	})
	elapsed := time.Since(base)
	if err != nil {
		return err
	}
	snaps := rec.Snapshots()
	rec.Collect(snaps)
	snap := snaps[0]
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	fmt.Fprintf(os.Stderr, "%s c=%d: %d requests, %.0f req/s, CPU %.2fs (user %.2fs sys %.2fs), %.0f req per CPU-s, p50 %dµs p99 %dµs\n",
		kind, n, snap[0].Count, float64(snap[0].Count)/elapsed.Seconds(), cpu.Seconds(),
		time.Duration(syscall.TimevalToNsec(ru.Utime)).Seconds(), time.Duration(syscall.TimevalToNsec(ru.Stime)).Seconds(),
		float64(snap[0].Count)/cpu.Seconds(), snap[0].Latency.Quantile(0.5), snap[0].Latency.Quantile(0.99))
	fmt.Printf("requests %d errors %d seconds %g\n", snap[0].Count, snap[0].ErrorCount(), elapsed.Seconds())
	return nil
}
