package cli

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/targets/capacitytruth"
)

// confine pins every thread of this process to one CPU (threads made
// later inherit it) and returns the function that gives them all back.
func confine(t *testing.T, cpu int) (undo func()) {
	t.Helper()
	var one, all unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	each := func(set *unix.CPUSet) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				unix.SchedSetaffinity(tid, set)
			}
		}
	}
	each(&one)
	return func() { each(&all) }
}

// A generator confined to one CPU shared with two busy-looping processes
// (taskset; each started here and killed by its PID at the end) gets a
// third of that CPU: its guard must find it bound, and the search must
// say "generator-limited" (exit 3) with no capacity and a lower bound
// under the server's true capacity (400/s), never a capacity of the
// server. The target (8 workers holding each request 20 ms) is in this
// process, confined too, but its holds are timers: its capacity stays
// W/S whatever the CPU.
func TestCapacityCommandGeneratorStarved(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about half a minute")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset")
	}
	srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: 8, Service: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const cpu = 0
	for range 2 {
		burner := exec.CommandContext(ctx, "taskset", "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
		if err := burner.Start(); err != nil {
			t.Fatal(err)
		}
		pid := burner.Process.Pid
		defer func() {
			unix.Kill(pid, unix.SIGKILL)
			burner.Wait()
		}()
	}
	undo := confine(t, cpu)
	defer undo()
	code, _, _, rec := capacitySearchBoosted(t, false, srv.URL(), "model: open\nusers: 1600\nopen: {rate: 100/s, arrivals: poisson, max_delay: 2s}",
		"--slo", "mean < 25ms", "--min", "100", "--max", "1600", "--step-duration", "2s", "--no-warm-up", "--budget", "10,60s", "-q")
	bound := 0
	for _, s := range rec.Steps {
		for _, iv := range s.Invalid {
			if iv.Kind == capacity.GeneratorBound {
				bound++
			}
		}
	}
	t.Logf("%d of %d steps found the generator bound; %s", bound, len(rec.Steps), rec.Statement)
	if code != ExitPartial || rec.Status != capacity.GeneratorLimited {
		t.Fatalf("exit %d, status %s: want 3, generator-limited (%s)", code, rec.Status, rec.Statement)
	}
	if !math.IsNaN(float64(rec.Max.Value)) || !strings.Contains(rec.Statement, "generator") {
		t.Fatalf("a generator-limited search gave a capacity %g, or did not say why: %s", float64(rec.Max.Value), rec.Statement)
	}
	if lo := float64(rec.Max.CI95[0]); lo >= 400 {
		t.Fatalf("the lower bound %g is above the server's true capacity of 400/s", lo)
	}
	if rec.FirstLimit == nil || rec.FirstLimit.Resource != "generator" {
		t.Errorf("first limit %+v: want the generator", rec.FirstLimit)
	}
}
