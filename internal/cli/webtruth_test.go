package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/targets/webtruth"
)

// The truth of a stalling server, phase by phase. The server holds every
// request 80–120 ms (uniform, seeded) and stalls 200 ms every 2 s, the
// stalls ending 2, 4 and 6 s into the run: the last one ends with the
// steady state, so its requests are answered after it. 200 arrivals/s
// (uniform: 40 in each stall) over a 1 s ramp-up, 5 s of steady state and
// a 1 s ramp-down; the truth is what the server recorded it held each
// request. Every phase's p50, p95 and p99 equal the truth within 2 %: the
// steady state's p95 is about 215 ms, with the last stall's requests in it
// (counted where they finished, it read about 180 ms). So `p95 < 200ms`
// fails, exit code 1.
//
// The figures are the generator's: on a machine that starves it (its
// threads waiting for a CPU over half the time they had work, as when
// other packages' tests share the two cores) its own delays are in them.
// Such an attempt is tried again, up to three; a miss on a machine that
// left the generator its CPU fails at once.
func TestWebTruthStallsCountInThePhaseOfTheirStart(t *testing.T) {
	for i := 1; ; i++ {
		problems, wait := webTruthAttempt(t)
		if len(problems) == 0 {
			return
		}
		if wait <= 0.5 || i == 3 {
			t.Fatalf("attempt %d, median CPU wait of the generator %.0f%%:\n%s", i, 100*wait, strings.Join(problems, "\n"))
		}
		t.Logf("attempt %d/3: starved (median CPU wait %.0f%%): %s", i, 100*wait, problems[0])
	}
}

// webTruthAttempt runs the case once and returns what did not hold, and
// the median share of its runnable time the generator waited for a CPU.
func webTruthAttempt(t *testing.T) (problems []string, wait float64) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	start := time.Now().Add(400 * time.Millisecond).Truncate(time.Millisecond)
	srv, err := webtruth.Start("127.0.0.1:0", webtruth.Config{
		Delay: webtruth.Dist{Kind: "uniform", Min: 80 * time.Millisecond, Max: 120 * time.Millisecond}, Seed: 7,
		StallEvery: 2 * time.Second, StallFor: 200 * time.Millisecond, StallAt: 1800 * time.Millisecond, Anchor: start,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "stall.yaml")
	os.WriteFile(file, []byte(`
name: stall
users: 100
model: open
open: {rate: 200/s, arrivals: uniform}
interval: 250ms
phases: {ramp_up: {duration: 1s}, steady: 5s, ramp_down: 1s}
web: {timeout: 5s}
actions: [{path: /}]
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := throng(t, "run", file, "--target", srv.URL(), "--start-at", start.UTC().Format(time.RFC3339Nano),
		"-q", "-o", out, "--threshold", "p95 < 200ms")
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, stdout, stderr)
	}
	var waits []float64
	for _, iv := range run.Repetitions[0].Intervals {
		waits = append(waits, iv.Client.CPUWait)
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		wait = waits[len(waits)/2]
	}
	pts, err := webtruth.Check(run, srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %v after the stalls' anchor\n%s", run.Repetitions[0].StartedAt.Sub(start), webtruth.Table(pts))
	var names []string
	for _, s := range run.Repetitions[0].Summaries {
		names = append(names, s.Phase)
	}
	if fmt.Sprint(names) != "[ramp-up steady ramp-down all]" {
		fail("phases %v, want the scenario's and all", names)
	}
	for _, p := range pts {
		if p.MaxRelativeError > 0.02 {
			fail("%s: p50/p95/p99 %v ms, the truth %v ms: %.1f%% off", p.Phase, p.Measured, p.True, 100*p.MaxRelativeError)
		}
		if d := int(p.Count) - p.Requests; d < -1 || d > 1 || (p.Phase == result.All && d != 0) {
			fail("%s: %d actions counted, %d requests arrived", p.Phase, p.Count, p.Requests)
		}
		if p.Phase == "steady" && p.True[1] < 204 {
			t.Fatalf("the steady state's true p95 is %.1f ms: the case is not what it should be (about 215 ms)", p.True[1])
		}
	}
	if code != 1 || len(run.Thresholds) != 1 || run.Thresholds[0].Pass {
		fail("exit %d, thresholds %+v: want p95 < 200ms to fail", code, run.Thresholds)
	}
	return problems, wait
}
