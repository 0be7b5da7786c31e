package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// runSegment runs one segment in virtual time and returns its result.
func runSegment(t *testing.T, seg plan.Segment) *result.Run {
	t.Helper()
	s, err := scenario.Parse("m.yaml", []byte(src), []string{"web"})
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
	}}
	synctest.Test(t, func(t *testing.T) {
		out, err := engine.Run(context.Background(), engine.Config{Plan: p, Driver: stepDriver{},
			Actions: []driver.Action{"a", "b", "c"}, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
		rep := result.Repetition{Intervals: out.Intervals, ElapsedS: out.Elapsed.Seconds()}
		rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
		run.Repetitions = []result.Repetition{rep}
	})
	return run
}

// Merged totals of n segments equal the single-process run of the same plan:
// counts exact, histograms merged exactly, interval by interval.
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
		if len(w.Intervals) != len(m.Intervals) {
			t.Fatalf("%d intervals merged, %d whole", len(m.Intervals), len(w.Intervals))
		}
		for i := range w.Intervals {
			wi, mi := w.Intervals[i], m.Intervals[i]
			if wi.Phase != mi.Phase || wi.StartS != mi.StartS {
				t.Errorf("interval %d: %s@%v vs %s@%v", i, wi.Phase, wi.StartS, mi.Phase, mi.StartS)
			}
			for a := range wi.Actions {
				ws, ms := wi.Actions[a].Snapshot(), mi.Actions[a].Snapshot()
				if ws.Count != ms.Count || ws.BytesIn != ms.BytesIn || !ws.Latency.Equal(&ms.Latency) || !ws.Service.Equal(&ms.Service) {
					t.Fatalf("weights %v, interval %d action %d: whole %d (max %d), merged %d (max %d)", weights, i, a, ws.Count, ws.Latency.Max, ms.Count, ms.Latency.Max)
				}
			}
		}
		wa, ma := result.Find(w.Summaries, "steady").Total, result.Find(m.Summaries, "steady").Total
		if wa.Count == 0 || wa.Count != ma.Count || wa.Latency != ma.Latency {
			t.Errorf("steady: whole %d %+v, merged %d %+v", wa.Count, wa.Latency, ma.Count, ma.Latency)
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
