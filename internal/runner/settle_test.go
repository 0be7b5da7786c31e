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
// ended (Unix nanoseconds) as a line to the file $THRONG_BURN_LOG.
func TestSettleHelperServer(t *testing.T) {
	logPath := os.Getenv("THRONG_BURN_LOG")
	if logPath == "" {
		t.Skip("a helper process of TestSearchWaitsForTheServerToSettle")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGUSR1)
	deadline := time.After(2 * time.Minute) // bounded, whatever happens
	for {
		select {
		case <-deadline:
			return
		case <-sig:
		}
		end := time.Now().Add(burnFor)
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
