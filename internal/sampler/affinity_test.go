package sampler

import (
	"context"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The CPUs a group may run on: the union of its threads' Cpus_allowed_list.
func TestAllowCPUs(t *testing.T) {
	for _, c := range []struct {
		lists []string
		want  int
		have  bool
	}{
		{[]string{"0-1"}, 2, true},
		{[]string{"1", "1"}, 1, true},
		{[]string{"0", "3"}, 2, true},
		{[]string{"0-3,8,10-11"}, 7, true},
		{[]string{"0-2", "1-4"}, 5, true},
		{[]string{"9999999"}, 0, false}, // beyond the set: ignored
		{nil, 0, false},
	} {
		var g groupTotals
		for _, l := range c.lists {
			g.allowCPUs([]byte("Name:\tx\nCpus_allowed:\tf\nCpus_allowed_list:\t" + l + "\nMems_allowed:\t1\n"))
		}
		var pts []Point
		g.emit(func(p Point) { pts = append(pts, p) }, 100)
		got, have := 0, false
		for _, p := range pts {
			if p.Name == "process_cpus" {
				got, have = int(p.Value), true
			}
		}
		if got != c.want || have != c.have {
			t.Errorf("%q: process_cpus %d (emitted %v), want %d (%v)", c.lists, got, have, c.want, c.have)
		}
	}
}

// A server pinned to one CPU with taskset is read as able to use one.
func TestProcessCPUsOfAPinnedProcess(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", "-c", "0", "sleep", "20")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond) // taskset execs sleep, pinned
	src, err := NewProcess(ProcessSelector{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	if err := src.Sample(ctx, func(p Point) {
		if p.Name == "process_cpus" {
			got = p.Value
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Errorf("process_cpus %g, want 1", got)
	}
}

// A one-thread process, spinning, reads as one thread, and uses at most
// one core however many the machine has: the premise of the threads
// bound of the capacity search's ceiling.
func TestOneThreadProcessUsesOneCoreAtMost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "timeout", "10", "sh", "-c", "while :; do :; done")
	// A group of its own, ended whole: killing timeout alone leaves its
	// spinning child running, orphaned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond)
	src, err := NewProcess(ProcessSelector{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	read := func() (map[string]float64, time.Time) {
		m := map[string]float64{}
		if err := src.Sample(ctx, func(p Point) { m[p.Key()] = p.Value }); err != nil {
			t.Fatal(err)
		}
		return m, time.Now()
	}
	a, ta := read()
	time.Sleep(2 * time.Second)
	b, tb := read()
	// timeout and the shell it runs: two processes of one thread each,
	// timeout asleep.
	if b["process_threads"] != b["process_count"] || b["process_count"] != 2 {
		t.Fatalf("threads %g of %g processes, want one each of 2", b["process_threads"], b["process_count"])
	}
	cpu := func(m map[string]float64) float64 {
		return m["process_cpu_user_seconds_total"] + m["process_cpu_system_seconds_total"]
	}
	cores := (cpu(b) - cpu(a)) / tb.Sub(ta).Seconds()
	t.Logf("a spinning shell used %.2f cores on a machine of %d", cores, runtime.NumCPU())
	if cores > 1.05 { // ticks of 10 ms over 2 s
		t.Errorf("one spinning thread used %.2f cores", cores)
	}
}
