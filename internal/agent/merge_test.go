package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// stepDriver: every action takes a time fixed by its name, so a run in
// virtual time is exactly reproducible.
type stepDriver struct{}

func (stepDriver) Validate() []error                                  { return nil }
func (stepDriver) Compile(a scenario.Action) (driver.Action, []error) { return a.Name, nil }
func (stepDriver) Prepare(context.Context, driver.Population) error   { return nil }
func (stepDriver) Open(context.Context, driver.User) (driver.Session, error) {
	return stepSession{}, nil
}

type stepSession struct{}

func (stepSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	d := map[string]time.Duration{"a": 3 * time.Millisecond, "b": 17 * time.Millisecond, "c": 40 * time.Millisecond}[a.(string)]
	time.Sleep(d)
	return driver.Outcome{BytesIn: 100, BytesOut: 20}, nil
}
func (stepSession) Close() error { return nil }

const src = `
users: 23
interval: 500ms
closed: {think: 20ms, think_distribution: exponential}
phases: {ramp_up: {duration: 1s}, steady: 2s, ramp_down: 500ms}
actions: [{name: a, weight: 5}, {name: b, weight: 2}, {name: c, weight: 1}]
`

// countBound is a plan that ends when every user has done its iterations:
// each segment ramps down when its own first user is done.
const countBound = `
users: 12
interval: 200ms
closed: {iterations: 40, think: 5ms, think_distribution: exponential}
actions: [{name: a, weight: 5}, {name: b, weight: 2}, {name: c, weight: 1}]
`

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// runSegment runs one segment of a plan in virtual time and returns its
// result, started skew after t0.
func runSegment(t *testing.T, seg plan.Segment) *result.Run { return runSegmentOf(t, src, seg, 0) }

func runSegmentOf(t *testing.T, text string, seg plan.Segment, skew time.Duration) *result.Run {
	t.Helper()
	s, err := scenario.Parse("m.yaml", []byte(text), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(s, seg)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(s.Source)
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{
		Scenario: "m", SourceSHA256: hex.EncodeToString(sum[:]), Users: s.Users, Segment: seg.String(),
		SegmentUsers: len(p.Users), Seed: s.Seed, Speedup: 1, Model: s.Model, Actions: []string{"a", "b", "c"}, Runs: 1,
		IntervalS: p.Interval.Seconds(), Iterations: p.Iterations,
	}}
	for _, ph := range p.Phases {
		end := ph.End.Seconds()
		if ph.End == plan.Open {
			end = -1
		}
		run.Meta.Phases = append(run.Meta.Phases, result.PhaseMeta{Name: ph.Name, StartS: ph.Start.Seconds(), EndS: end})
	}
	synctest.Test(t, func(t *testing.T) {
		out, err := engine.Run(context.Background(), engine.Config{Plan: p, Driver: stepDriver{},
			Actions: []driver.Action{"a", "b", "c"}, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
		rep := result.Repetition{Intervals: out.Intervals, ElapsedS: out.Elapsed.Seconds(), StartedAt: t0.Add(skew)}
		rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
		run.Repetitions = []result.Repetition{rep}
	})
	return run
}

// phaseNames lists the summaries' phases.
func phaseNames(sums []result.Summary) []string {
	var out []string
	for _, s := range sums {
		out = append(out, s.Phase)
	}
	return out
}

// sameContent reports whether two summaries count the same actions with
// the same histograms, action by action.
func sameContent(a, b *result.Summary) bool {
	for i := range a.Actions {
		x, y := a.Actions[i], b.Actions[i]
		if x.Count != y.Count || x.OK != y.OK || x.Latency != y.Latency || x.Service != y.Service {
			return false
		}
	}
	return true
}

// Merged totals of n segments equal the single-process run of the same plan:
// counts exact, histograms merged exactly, in every phase; the plan's
// intervals are the whole run's, interval by interval.
func TestMergeEqualsTheWholeRun(t *testing.T) {
	whole := runSegment(t, plan.Whole)
	for _, weights := range [][]int{nil, {1, 2, 1}} {
		var parts []Part
		for k := 1; k <= 3; k++ {
			seg, err := plan.NewSegment(k, 3, weights)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, Part{Name: seg.String(), Run: runSegment(t, seg)})
		}
		slices.Reverse(parts) // order of the files must not matter
		merged, err := Merge(parts)
		if err != nil {
			t.Fatal(err)
		}
		if merged.Partial || len(merged.Agents) != 3 || merged.Meta.SegmentUsers != 23 {
			t.Fatalf("merged: partial=%v (%s) agents=%d users=%d", merged.Partial, merged.Reason, len(merged.Agents), merged.Meta.SegmentUsers)
		}
		w, m := whole.Repetitions[0], merged.Repetitions[0]
		for i := range w.Intervals {
			wi := w.Intervals[i]
			if wi.Phase == plan.Tail {
				break // after the plan the segments end apart
			}
			mi := m.Intervals[i]
			if wi.Phase != mi.Phase || wi.StartS != mi.StartS || wi.DurationS != mi.DurationS {
				t.Errorf("interval %d: %s@%v+%v vs %s@%v+%v", i, wi.Phase, wi.StartS, wi.DurationS, mi.Phase, mi.StartS, mi.DurationS)
			}
		}
		if !slices.Equal(phaseNames(w.Summaries), phaseNames(m.Summaries)) {
			t.Fatalf("phases: whole %v, merged %v", phaseNames(w.Summaries), phaseNames(m.Summaries))
		}
		for i := range w.Summaries {
			ws, ms := &w.Summaries[i], &m.Summaries[i]
			if ws.Total.Count == 0 || !sameContent(ws, ms) || ws.DurationS != ms.DurationS && ws.Phase != result.All {
				t.Errorf("weights %v, %s: whole %d actions in %v s %+v, merged %d in %v s %+v", weights, ws.Phase,
					ws.Total.Count, ws.DurationS, ws.Total.Latency, ms.Total.Count, ms.DurationS, ms.Total.Latency)
			}
		}
	}
}

// Segments that start apart, and whose intervals are cut differently,
// merge on one clock: every phase counts what the single process counts
// and lasts the time the plan gives it, so its rate is the single run's;
// the whole run's rate is within the start skew; no phase is invented.
func TestMergeOnOneClock(t *testing.T) {
	skews := []time.Duration{0, 90 * time.Millisecond, 37 * time.Millisecond}
	for _, text := range []string{src, countBound} {
		whole := runSegmentOf(t, text, plan.Whole, 0)
		var parts []Part
		for k := 1; k <= 3; k++ {
			seg := plan.Segment{K: k, N: 3}
			parts = append(parts, Part{Name: seg.String(), Run: runSegmentOf(t, text, seg, skews[k-1])})
		}
		merged, err := Merge(parts)
		if err != nil {
			t.Fatal(err)
		}
		w, m := whole.Repetitions[0], merged.Repetitions[0]
		if !slices.Equal(phaseNames(w.Summaries), phaseNames(m.Summaries)) {
			t.Fatalf("phases: whole %v, merged %v", phaseNames(w.Summaries), phaseNames(m.Summaries))
		}
		if !m.StartedAt.Equal(t0) || m.ElapsedS < w.ElapsedS || m.ElapsedS > w.ElapsedS+0.09+1e-9 {
			t.Errorf("merged: started %v, elapsed %v s; whole %v s (skew 90 ms)", m.StartedAt, m.ElapsedS, w.ElapsedS)
		}
		wa, ma := result.Find(w.Summaries, result.All), result.Find(m.Summaries, result.All)
		skew := 0.09 / w.ElapsedS
		if !sameContent(wa, ma) || ma.DurationS != m.ElapsedS || ma.Total.RatePerS > wa.Total.RatePerS || ma.Total.RatePerS < wa.Total.RatePerS*(1-skew) {
			t.Errorf("all: whole %d at %.1f/s over %v s, merged %d at %.1f/s over %v s", wa.Total.Count, wa.Total.RatePerS, wa.DurationS,
				ma.Total.Count, ma.Total.RatePerS, ma.DurationS)
		}
		var total float64
		for _, iv := range m.Intervals {
			total += iv.DurationS
		}
		if math.Abs(total-ma.DurationS) > 1e-9 {
			t.Errorf("the merged intervals last %v s, the repetition %v s", total, ma.DurationS)
		}
		if text == countBound {
			// Each segment ramps down when its own first user is done: the
			// merged steady state lasts so that its rate is the sum of the
			// segments' steady rates (their users at full load), between the
			// shortest and the longest of their steady states. It is not the
			// single process's to the action (that one ramped down when the
			// first user of all was done), but close.
			ws, ms := result.Find(w.Summaries, "steady"), result.Find(m.Summaries, "steady")
			var sum, shortest, longest float64
			shortest = math.Inf(1)
			for _, p := range parts {
				s := result.Find(p.Run.Repetitions[0].Summaries, "steady")
				sum += s.Total.RatePerS
				shortest, longest = min(shortest, s.DurationS), max(longest, s.DurationS)
			}
			t.Logf("count-bound steady: whole %d in %.3f s (%.1f/s), merged %d in %.3f s (%.1f/s), the segments' rates add up to %.1f/s",
				ws.Total.Count, ws.DurationS, ws.Total.RatePerS, ms.Total.Count, ms.DurationS, ms.Total.RatePerS, sum)
			if math.Abs(ms.Total.RatePerS-sum) > 1e-6*sum || ms.DurationS < shortest || ms.DurationS > longest ||
				math.Abs(ms.Total.RatePerS/ws.Total.RatePerS-1) > 0.05 {
				t.Errorf("steady state: whole %.1f/s, merged %.1f/s over %v s (segments %v to %v s, summed rate %.1f/s)",
					ws.Total.RatePerS, ms.Total.RatePerS, ms.DurationS, shortest, longest, sum)
			}
			continue
		}
		for _, ph := range []string{"ramp-up", "steady", "ramp-down"} {
			ws, ms := result.Find(w.Summaries, ph), result.Find(m.Summaries, ph)
			if !sameContent(ws, ms) || ws.DurationS != ms.DurationS || ws.Total.RatePerS != ms.Total.RatePerS {
				t.Errorf("%s: whole %d at %v/s over %v s, merged %d at %v/s over %v s", ph, ws.Total.Count, ws.Total.RatePerS, ws.DurationS,
					ms.Total.Count, ms.Total.RatePerS, ms.DurationS)
			}
		}
	}
}

func TestMergeRefusesMismatches(t *testing.T) {
	a := runSegment(t, plan.Segment{K: 1, N: 2})
	b := runSegment(t, plan.Segment{K: 2, N: 2})
	// A missing segment: merged, but partial and saying which.
	m, err := Merge([]Part{{"a", a}})
	if err != nil || !m.Partial || m.Reason != "segments 2 of 2 are missing: their users are not in this result" {
		t.Errorf("missing segment: %v %q", err, m.Reason)
	}
	dup := *b
	dup.Meta.Segment = "1/2"
	if _, err := Merge([]Part{{"a", a}, {"dup", &dup}}); err == nil {
		t.Error("two copies of segment 1/2 merged")
	}
	other := *b
	other.Meta.SourceSHA256 = "different"
	if _, err := Merge([]Part{{"a", a}, {"other", &other}}); err == nil {
		t.Error("segments of different scenarios merged")
	}
	flags := *b
	flags.Meta.Overrides = map[string]string{"--users": "5"}
	if _, err := Merge([]Part{{"a", a}, {"flags", &flags}}); err == nil {
		t.Error("segments run with different flags merged")
	}
}
