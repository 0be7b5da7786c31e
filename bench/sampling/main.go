// Command sampling measures what throng's counter sampling costs: the
// sources system, one process group and generator (internal/sampler), read
// together every second as a load run reads them, beside sysstat's
// "pidstat 1" and "sar 1" over the same seconds.
//
//	go run ./bench/sampling [-n 30] [-group nginx|PID|NAME] [-interval 1s]
//
// It runs two phases of N seconds each in one process:
//
//  1. idle: this process sleeps (the Go runtime's own background cost);
//  2. sampling: this process samples every interval and computes the rates
//     (sampler.Sample + sampler.Rates), while "pidstat 1 N" and "sar 1 N"
//     run as child processes over the same N seconds.
//
// This process's CPU is its rusage (user + system) over each phase;
// pidstat's and sar's is their child rusage from wait4 (sar's includes the
// sadc it starts). It prints CPU milliseconds per second for each, the
// sampling cost (sampling - idle) as a share of one core, and the ratios of
// the sampling cost to pidstat and sar.
//
// The process group is, by default, a private nginx with two workers started
// through internal/testenv (three processes), or the parent of this program
// when nginx is not installed; -group takes a PID or a process name instead.
// pidstat and sar come from Debian's sysstat package (apt-get install
// sysstat); without them their lines are left out.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	n := flag.Int("n", 30, "seconds of each phase")
	group := flag.String("group", "nginx", `process group to sample: "nginx" (a private nginx with 2 workers), a PID or a process name`)
	interval := flag.Duration("interval", time.Second, "sampling interval")
	flag.Parse()
	if err := run(*n, *group, *interval); err != nil {
		fmt.Fprintln(os.Stderr, "sampling:", err)
		os.Exit(1)
	}
}

func run(n int, group string, interval time.Duration) error {
	if n < 2 {
		return fmt.Errorf("-n %d: want at least 2 seconds", n)
	}
	sel, cleanup, err := chooseGroup(group)
	if err != nil {
		return err
	}
	defer cleanup()
	proc, err := sampler.NewProcess(sel)
	if err != nil {
		return err
	}
	s := sampler.New(interval, sampler.NewSystem("/"), proc, sampler.NewGenerator())
	first := s.Sample(context.Background())
	points := 0
	for _, src := range first.Sources {
		if !src.Up {
			return fmt.Errorf("source %s is down: %s", src.Name, src.Err)
		}
		points += len(src.Points)
	}
	fmt.Printf("sources: %v, %d points per reading; %d s per phase, sampling every %v\n", s.Sources(), points, n, interval)
	for _, src := range first.Sources {
		if src.Name == proc.Name() {
			for _, p := range src.Points {
				if p.Name == "process_count" {
					fmt.Printf("process group %q: %v processes\n", proc.Name(), p.Value)
				}
			}
		}
	}
	wall := time.Duration(n) * time.Second

	// Phase 1: idle.
	c0 := selfCPU()
	time.Sleep(wall)
	idle := selfCPU() - c0

	// Phase 2: sampling, with pidstat and sar over the same seconds.
	tools := []*tool{
		startTool("pidstat 1", "pidstat", "1", strconv.Itoa(n)),
		startTool("sar 1", "sar", "1", strconv.Itoa(n)),
	}
	c0 = selfCPU()
	start := time.Now()
	tick := time.NewTicker(interval)
	prev := s.Sample(context.Background())
	readings, down := 1, 0
	for time.Since(start) < wall {
		<-tick.C
		cur := s.Sample(context.Background())
		for _, sv := range sampler.Rates(prev, cur) {
			if !sv.Up {
				down++
			}
		}
		prev = cur
		readings++
	}
	tick.Stop()
	sampling := selfCPU() - c0
	elapsed := time.Since(start)
	for _, t := range tools {
		t.wait()
	}

	perSec := func(d time.Duration, over time.Duration) float64 {
		return float64(d.Microseconds()) / 1000 / over.Seconds()
	}
	cost := perSec(sampling, elapsed) - perSec(idle, wall)
	fmt.Printf("\n%-36s %10s %12s\n", "", "CPU-ms/s", "% of 1 core")
	fmt.Printf("%-36s %10.3f %12.4f\n", "idle (not sampling)", perSec(idle, wall), perSec(idle, wall)/10)
	fmt.Printf("%-36s %10.3f %12.4f   (%d readings, %d source-intervals down)\n",
		"sampling (3 sources, rates)", perSec(sampling, elapsed), perSec(sampling, elapsed)/10, readings, down)
	fmt.Printf("%-36s %10.3f %12.4f   (%.3f ms per reading)\n", "sampling cost (sampling - idle)", cost, cost/10,
		cost*interval.Seconds())
	for _, t := range tools {
		if t.err != nil {
			fmt.Printf("%-36s %10s   %v\n", t.name, "-", t.err)
			continue
		}
		c := perSec(t.cpu, t.elapsed)
		ratio := "-"
		if c > 0 {
			ratio = fmt.Sprintf("sampling cost / %s = %.2f", t.name, cost/c)
		}
		fmt.Printf("%-36s %10.3f %12.4f   (over %.1f s; %s)\n", t.name+" (child rusage)", c, c/10, t.elapsed.Seconds(), ratio)
	}
	return nil
}

// chooseGroup returns the selector of the process group to sample and a
// function that stops what was started for it.
func chooseGroup(group string) (sampler.ProcessSelector, func(), error) {
	nop := func() {}
	if pid, err := strconv.Atoi(group); err == nil {
		return sampler.ProcessSelector{PID: pid}, nop, nil
	}
	if group != "nginx" {
		return sampler.ProcessSelector{Name: group}, nop, nil
	}
	if _, err := testenv.FindBinary("nginx", testenv.NginxPaths...); err != nil {
		fmt.Printf("nginx not installed: sampling the parent process %d and its descendants instead\n", os.Getppid())
		return sampler.ProcessSelector{PID: os.Getppid()}, nop, nil
	}
	srv, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{Workers: 2})
	if err != nil {
		return sampler.ProcessSelector{}, nop, err
	}
	fmt.Printf("started nginx %s (pid %d, 2 workers)\n", srv.URL, srv.PID)
	return sampler.ProcessSelector{PID: srv.PID}, func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "sampling: stopping nginx:", err)
		}
	}, nil
}

// selfCPU is this process's user + system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tool is a sysstat command run as a child for comparison.
type tool struct {
	name    string
	cmd     *exec.Cmd
	start   time.Time
	elapsed time.Duration
	cpu     time.Duration // user + system of the child and the children it waited for
	err     error
}

func startTool(name, bin string, args ...string) *tool {
	t := &tool{name: name}
	path, err := exec.LookPath(bin)
	if err != nil {
		t.err = fmt.Errorf("not installed (apt-get install sysstat): %w", err)
		return t
	}
	t.cmd = exec.Command(path, args...)
	t.cmd.Stdout = io.Discard
	t.cmd.Stderr = io.Discard
	t.cmd.Env = append(os.Environ(), "LC_ALL=C", "S_TIME_FORMAT=ISO")
	t.start = time.Now()
	if err := t.cmd.Start(); err != nil {
		t.err = err
		t.cmd = nil
	}
	return t
}

func (t *tool) wait() {
	if t.cmd == nil {
		return
	}
	err := t.cmd.Wait()
	t.elapsed = time.Since(t.start)
	if err != nil {
		t.err = err
		return
	}
	t.cpu = t.cmd.ProcessState.UserTime() + t.cmd.ProcessState.SystemTime()
}
