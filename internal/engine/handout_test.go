package engine

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// A run that hands its intervals out keeps none of them (its memory does
// not grow with its length), and what it hands out — with a final
// amendment applied — is what a run that keeps them holds.
func TestHandedOutIntervalsAreNotKept(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		total     uint64
	}{
		{"count-bound", "users: 3\nclosed: {iterations: 5}\nactions: [{name: a}]\n", 15},
		// Actions of 7 ms, cuts every 33 ms, the end at 200 ms: no action
		// ends in the instant of a cut, where either side would be right.
		{"time-bound", "users: 2\ninterval: 33ms\nclosed: {}\nphases: {steady: 200ms}\nactions: [{name: a}]\n", 58}, // 29 each: the one begun before 200 ms finishes
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := compile(t, tt.src)
				take := 10 * time.Millisecond
				if tt.name == "time-bound" {
					take = 7 * time.Millisecond
				}
				acts := make([]driver.Action, len(p.Actions))
				for i, a := range p.Actions {
					acts[i] = a.Name
				}
				kept, err := Run(context.Background(), Config{Plan: p, Driver: &sleepDriver{take: take}, Actions: acts, Kind: scenario.EngineGoroutines})
				if err != nil {
					t.Fatal(err)
				}
				var handed []result.Interval
				out, err := Run(context.Background(), Config{Plan: p, Driver: &sleepDriver{take: take}, Actions: acts, Kind: scenario.EngineGoroutines,
					OnInterval: func(iv *result.Interval) { handed = append(handed, *iv) }})
				if err != nil {
					t.Fatal(err)
				}
				if out.Intervals != nil {
					t.Errorf("%d intervals kept by a run that handed them out", len(out.Intervals))
				}
				if out.Amended != nil {
					if n := len(handed); n == 0 || handed[n-1].Index != out.Amended.Index {
						t.Fatalf("amendment of interval %d, last handed out %d", out.Amended.Index, n-1)
					}
					handed[len(handed)-1] = *out.Amended
				}
				a, _ := json.Marshal(stripClient(handed))
				b, _ := json.Marshal(stripClient(kept.Intervals))
				if string(a) != string(b) {
					t.Errorf("handed out:\n%s\nkept:\n%s", a, b)
				}
				all := result.Find(result.Summarize([]string{"a"}, 0, handed), result.All)
				if tt.total > 0 && all.Total.Count != tt.total {
					t.Errorf("%d actions handed out, want %d", all.Total.Count, tt.total)
				}
			})
		})
	}
}

// stripClient keeps what the plan and the driver determine: the users
// finishing in one instant may be counted before or after a cut, and the
// generator's own figures differ from run to run.
func stripClient(ivs []result.Interval) []result.Interval {
	out := append([]result.Interval(nil), ivs...)
	for i := range out {
		out[i].Client = result.Client{}
		out[i].ActiveUsers, out[i].UsersMean = 0, 0
	}
	return out
}

// What finishes in the very instant of a cut is never lost: after a cut
// that is not the last, it goes into the next interval; after the final
// one, into the last interval, handed out again as Outcome.Amended — and
// the interval handed out first is left as it was.
func TestActionsInTheInstantOfACut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 1\ninterval: 1s\nclosed: {}\nphases: {steady: 10s}\nactions: [{name: a}]\n")
		var handed []*result.Interval
		st := &state{plan: p, actions: 1, firstDone: make(chan struct{}), phases: newPhases(p, false)}
		rec := metrics.NewRecorder(1, st.phases)
		st.recs = []*metrics.Recorder{rec}
		c := newCollector(st, Config{Plan: p, OnInterval: func(iv *result.Interval) { handed = append(handed, iv) }})
		st.base = time.Now()
		c.phase = "steady"
		record := func(n int) {
			for range n {
				rec.Record(0, st.Now(), time.Millisecond, time.Millisecond, 1, 1, driver.OK, nil)
			}
		}
		time.Sleep(time.Second)
		record(2)
		c.cutNow(false) // interval 0: 2 actions
		record(3)
		c.cutNow(false) // the same instant: carried over
		time.Sleep(time.Second)
		record(1)
		c.cutNow(false) // interval 1: 3 + 1
		record(5)
		c.cutNow(true) // the same instant, final: amends interval 1
		if len(handed) != 2 || handed[0].Actions[0].Count != 2 || handed[1].Actions[0].Count != 4 {
			t.Fatalf("handed out %d intervals: %+v", len(handed), handed)
		}
		if !c.amended || c.lastIv.Index != 1 || c.lastIv.Actions[0].Count != 9 || c.lastIv.Actions[0].Latency.N != 9 {
			t.Errorf("amended %v: interval %d with %d actions, want interval 1 with 9", c.amended, c.lastIv.Index, c.lastIv.Actions[0].Count)
		}
		if handed[1].Actions[0].Count != 4 || handed[1].Actions[0].Latency.N != 4 {
			t.Errorf("the interval handed out was changed: %d actions", handed[1].Actions[0].Count)
		}
		if c.kept != nil {
			t.Errorf("%d intervals kept", len(c.kept))
		}
	})
}
