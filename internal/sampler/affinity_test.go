package sampler

import (
	"context"
	"os/exec"
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
