package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
)

// burnFor is how long the helper server burns CPU after each step.
const burnFor = 2 * time.Second

// TestSettleHelperServer is not a test: re-executed by
// startBurningServer, it stands for a server draining a backlog. Each
// SIGUSR1 makes it busy-loop for burnFor, then append the time the burn
// ended (Unix nanoseconds) as a line to the file $THRONG_BURN_LOG. SIGUSR2
// makes it busy-loop until it is killed (a server that never settles),
// or for two minutes at most.
func TestSettleHelperServer(t *testing.T) {
	logPath := os.Getenv("THRONG_BURN_LOG")
	if logPath == "" {
		t.Skip("a helper process of TestSearchWaitsForTheServerToSettle")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	limit := time.Now().Add(2 * time.Minute) // bounded, whatever happens
	deadline := time.After(time.Until(limit))
	for {
		var s os.Signal
		select {
		case <-deadline:
			return
		case s = <-sig:
		}
		end := time.Now().Add(burnFor)
		if s == syscall.SIGUSR2 {
			end = limit
		}
		x := 0
		for time.Now().Before(end) {
			for i := 0; i < 10000; i++ {
				x += i
			}
		}
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(3)
		}
		fmt.Fprintf(f, "%d %d\n", time.Now().UnixNano(), x&1)
		f.Close()
	}
}

// startBurningServer starts the helper server and returns its process
// and the file its burns' ends are logged in; it is killed at the end.
func startBurningServer(t *testing.T) (*os.Process, string) {
	t.Helper()
	logPath := t.TempDir() + "/burns"
	cmd := exec.Command(os.Args[0], "-test.run=^TestSettleHelperServer$")
	cmd.Env = append(os.Environ(), "THRONG_BURN_LOG="+logPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(300 * time.Millisecond) // let it install its signal handler
	return cmd.Process, logPath
}

// burnEnds reads the ends of the helper's burns, in order.
func burnEnds(t *testing.T, path string) []time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ns, err := strconv.ParseInt(strings.Fields(line)[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Unix(0, ns))
	}
	return out
}

// settleSearch runs a two-step capacity search (files, 2 then 8 users,
// SLO always met) measuring the helper server as the server process;
// after each step the helper burns a core for burnFor, as a server
// draining a backlog would. It returns each step's start, the ends of
// the burns, and the record.
func settleSearch(t *testing.T, noSettle bool) ([]time.Time, []time.Time, []float64, []bool) {
	proc, logPath := startBurningServer(t)
	p := &Preparer{Families: []driver.Family{files.Family()}, Version: "v0-test"}
	src := fmt.Sprintf(`name: settle
model: closed
users: 2
interval: 250ms
closed: {think: 50ms}
phases: {steady: 1s}
counters: {processes: ["%d"]}
files:
  population: {files: 2, per_user: true, size: 1KB}
actions:
  - {name: read, op: read}
`, proc.Pid)
	s, err := p.NewSearch(Request{Source: source(src), Settings: []Setting{{Key: "target", Value: "file://localhost" + t.TempDir()}}},
		SearchOptions{SLOs: []string{"mean < 10s"}, Min: 2, Max: 8, StepDuration: time.Second, NoWarmUp: true, MaxSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	s.NoSettle = noSettle
	var starts []time.Time
	s.OnStart = func(n int, _ capacity.Request) { starts = append(starts, time.Now()) }
	s.OnStep = func(n int, _ *capacity.Record) {
		if err := proc.Signal(syscall.SIGUSR1); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Steps) < 2 {
		t.Fatalf("%d steps, want 2: %s", len(rec.Steps), rec.Statement)
	}
	// The settle is written and read back as it was.
	path := t.TempDir() + "/rec.json"
	if err := capacity.WriteRecordFile(path, rec); err != nil {
		t.Fatal(err)
	}
	back, err := capacity.ReadRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec.Steps {
		a, b := rec.Steps[i].Settle, back.Steps[i].Settle
		if (a == nil) != (b == nil) || a != nil && (a.ElapsedS != b.ElapsedS || a.TimedOut != b.TimedOut || a.Why != b.Why) {
			t.Errorf("step %d's settle read back as %+v, written %+v", i+1, b, a)
		}
	}
	// Wait for the last burn to end before reading the log.
	time.Sleep(burnFor + 500*time.Millisecond)
	var elapsed []float64
	var timedOut []bool
	for _, st := range rec.Steps {
		if st.Settle == nil {
			elapsed, timedOut = append(elapsed, -1), append(timedOut, false)
			continue
		}
		elapsed, timedOut = append(elapsed, st.Settle.ElapsedS), append(timedOut, st.Settle.TimedOut)
		t.Logf("settle: %s", st.Settle.Why)
	}
	return starts, burnEnds(t, logPath), elapsed, timedOut
}

// A capacity search measuring a server waits, before each step, for the
// server's CPU to fall: the helper server burns a core for 2 s after the
// first step, so the second step starts only after that burn ended, and
// its settle took at least the burn (less a tolerance for the signal and
// the sampling), and did not time out. With the settle off, the second
// step starts while the server still burns: the test sees the
// difference.
func TestSearchWaitsForTheServerToSettle(t *testing.T) {
	starts, ends, elapsed, timedOut := settleSearch(t, false)
	if len(starts) < 2 || len(ends) < 1 {
		t.Fatalf("starts %v, burn ends %v", starts, ends)
	}
	if !starts[1].After(ends[0]) {
		t.Errorf("step 2 started at %s, %s before the server's burn ended at %s", starts[1].Format(time.StampMilli), ends[0].Sub(starts[1]), ends[0].Format(time.StampMilli))
	}
	if elapsed[0] != -1 {
		t.Errorf("step 1 has a settle (%.2fs): none is waited for before the first step", elapsed[0])
	}
	if min := (burnFor - 500*time.Millisecond).Seconds(); elapsed[1] < min || timedOut[1] {
		t.Errorf("settle before step 2: %.2fs (timed out %v), want ≥ %.2fs and not timed out", elapsed[1], timedOut[1], min)
	}

	t.Run("off", func(t *testing.T) {
		starts, ends, elapsed, _ := settleSearch(t, true)
		if len(starts) < 2 || len(ends) < 1 {
			t.Fatalf("starts %v, burn ends %v", starts, ends)
		}
		if !starts[1].Before(ends[0]) {
			t.Errorf("with the settle off, step 2 started at %s, after the burn ended at %s: the test cannot tell a settle", starts[1].Format(time.StampMilli), ends[0].Format(time.StampMilli))
		}
		if elapsed[1] != -1 {
			t.Errorf("with the settle off, step 2 has a settle of %.2fs", elapsed[1])
		}
	})
}

// A settle runs out at its limit while the server still burns, and says
// so: timed out, its last rate near the core the helper burns.
func TestSettleTimesOut(t *testing.T) {
	proc, _ := startBurningServer(t)
	st, err := newSettler([]string{strconv.Itoa(proc.Pid)})
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	w := st.wait(context.Background(), 1200*time.Millisecond)
	t.Log(w.Why)
	if !w.TimedOut || w.ElapsedS < 1.2 || w.ElapsedS > 1.9 {
		t.Errorf("settle of a server burning for %s with a limit of 1.2s: timed out %v after %.2fs", burnFor, w.TimedOut, w.ElapsedS)
	}
	if float64(w.CPU) < 0.3 {
		t.Errorf("last rate %.3f cores, want about 1 (the helper's busy loop)", float64(w.CPU))
	}
	time.Sleep(burnFor) // let the burn end before the helper is killed
}

// budgetSearch runs a capacity search (files, 2 to 128 users, 1 s steps,
// SLO always met: it would run four steps) with a time budget, measuring
// the helper server as the server process; after each step the helper is
// sent sig (SIGUSR1: it burns a core for burnFor; SIGUSR2: it burns until
// killed). It returns the record and the search's wall time.
func budgetSearch(t *testing.T, budget time.Duration, sig syscall.Signal) (*capacity.Record, time.Duration) {
	proc, _ := startBurningServer(t)
	p := &Preparer{Families: []driver.Family{files.Family()}, Version: "v0-test"}
	src := fmt.Sprintf(`name: settle-budget
model: closed
users: 2
interval: 250ms
closed: {think: 50ms}
phases: {steady: 1s}
counters: {processes: ["%d"]}
files:
  population: {files: 2, per_user: true, size: 1KB}
actions:
  - {name: read, op: read}
`, proc.Pid)
	s, err := p.NewSearch(Request{Source: source(src), Settings: []Setting{{Key: "target", Value: "file://localhost" + t.TempDir()}}},
		SearchOptions{SLOs: []string{"mean < 10s"}, Min: 2, Max: 128, StepDuration: time.Second, NoWarmUp: true, MaxSteps: 10, MaxTime: budget})
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	s.OnStep = func(n int, _ *capacity.Record) {
		if err := proc.Signal(sig); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	rec, err := s.Run(ctx)
	wall := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("budget %s: %d steps in %s (recorded %.2fs): %s", budget, len(rec.Steps), wall.Round(time.Millisecond), rec.ElapsedS, rec.Statement)
	for i, st := range rec.Steps {
		why := ""
		if st.Settle != nil {
			why = st.Settle.Why
		}
		t.Logf("step %d: %.2fs before (%s), %.2fs long", i+1, st.BeforeS, why, st.ElapsedS)
	}
	for _, n := range rec.Notes {
		t.Logf("note: %s", n)
	}
	return rec, wall
}

// budgetSlack is how far past its time budget a search may end: the
// prediction of a step's wall time errs, and the settle's samples are
// 250 ms apart.
const budgetSlack = 1500 * time.Millisecond

// checkBudget checks what every search with a time budget must do: end by
// its budget (and the slack), with status budget, its record's wall time
// the one measured, and each step's time before it (the settle, the
// preparation) in that wall time (a last wait the budget cut is in it
// too, before no step).
func checkBudget(t *testing.T, rec *capacity.Record, wall, budget time.Duration) {
	t.Helper()
	if wall > budget+budgetSlack {
		t.Errorf("the search took %s, past its budget of %s (+%s)", wall.Round(time.Millisecond), budget, budgetSlack)
	}
	if rec.Status != capacity.Budget {
		t.Errorf("status %s, want budget spent: %s", rec.Status, rec.Statement)
	}
	if d := rec.ElapsedS - wall.Seconds(); d > 0.1 || d < -0.5 {
		t.Errorf("recorded wall time %.2fs, measured %.2fs", rec.ElapsedS, wall.Seconds())
	}
	var sum float64
	for _, st := range rec.Steps {
		sum += st.BeforeS + st.ElapsedS
	}
	if sum > rec.ElapsedS+0.05 {
		t.Errorf("the steps and the time before them sum to %.2fs, the search's wall time is %.2fs", sum, rec.ElapsedS)
	}
}

// The time budget bounds the search's whole wall time, its waits for the
// server to settle included: a server that burns a core for 2 s after
// each step makes each wait last that long; a search of 1 s steps that
// would run four steps (and, counting only its steps, fit them in its 9 s
// budget) must end by its budget, status budget, the waits counted (the
// wait before step 2 settled, and is in step 2's time before). With the
// waits not counted the search runs its four steps and three waits, about
// 13 s (checked by mutation).
func TestSettleCountsInTheTimeBudget(t *testing.T) {
	const budget = 9 * time.Second
	rec, wall := budgetSearch(t, budget, syscall.SIGUSR1)
	checkBudget(t, rec, wall, budget)
	if len(rec.Steps) < 2 {
		t.Fatalf("%d steps: the test needs a settled wait before step 2", len(rec.Steps))
	}
	w := rec.Steps[1].Settle
	if w == nil || w.TimedOut || w.ElapsedS < (burnFor-500*time.Millisecond).Seconds() {
		t.Fatalf("the wait before step 2: %+v, want one that settled after about %s", w, burnFor)
	}
	if rec.Steps[1].BeforeS < w.ElapsedS {
		t.Errorf("step 2's time before, %.2fs, does not hold its wait of %.2fs", rec.Steps[1].BeforeS, w.ElapsedS)
	}
	time.Sleep(burnFor) // let a burn end before the helper is killed
}

// A wait for a server that never settles is cut to what is left of the
// time budget (its own limit is 30 s), and the search ends there with the
// best bracket, status budget, saying why (checked by mutation: with the
// wait not cut, the search takes over 30 s).
func TestSettleIsCutToTheTimeBudget(t *testing.T) {
	const budget = 8 * time.Second
	rec, wall := budgetSearch(t, budget, syscall.SIGUSR2)
	checkBudget(t, rec, wall, budget)
	if len(rec.Steps) < 1 {
		t.Fatal("no step ran")
	}
	found := false
	for _, n := range rec.Notes {
		found = found || strings.Contains(n, "the time budget (8s) ran out")
	}
	if !found {
		t.Errorf("no note says the budget ran out while waiting for the server: %q", rec.Notes)
	}
}
