package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// An action counts in the phase of its scheduled start, wherever it
// finishes: one user doing 400 ms actions back to back over a 1 s ramp-up
// and a 2 s steady state starts 3 in the ramp-up (the third finishing in
// the steady state) and 5 in the steady state (the last finishing at 3.2 s,
// after the plan's end). The steady phase lasts its planned 2 s, the time
// after the end is in "all" only, and no phase the plan lacks appears.
func TestActionsCountInThePhaseOfTheirScheduledStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 1\ninterval: 1s\nclosed: {}\nphases: {ramp_up: {duration: 1s}, steady: 2s}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 400 * time.Millisecond}
		out := run(t, context.Background(), p, d)
		sums := result.Summarize([]string{"a"}, 0, out.Intervals)
		var phases []string
		for _, s := range sums {
			phases = append(phases, s.Phase)
		}
		if len(sums) != 3 || phases[0] != "ramp-up" || phases[1] != "steady" {
			t.Fatalf("phases %v, want ramp-up, steady, all", phases)
		}
		up, st, all := sums[0], sums[1], sums[2]
		if up.Total.Count != 3 || st.Total.Count != 5 || all.Total.Count != 8 {
			t.Errorf("ramp-up %d, steady %d, all %d actions; want 3, 5, 8", up.Total.Count, st.Total.Count, all.Total.Count)
		}
		if st.DurationS != 2 || st.Total.RatePerS != 2.5 || all.DurationS != 3.2 {
			t.Errorf("steady %v s at %v/s, all %v s; want 2 s at 2.5/s, 3.2 s", st.DurationS, st.Total.RatePerS, all.DurationS)
		}
		if st.Total.Latency.P50Ms != 400 || st.Total.Latency.MaxMs != 400 {
			t.Errorf("steady latency %+v, want 400 ms", st.Total.Latency)
		}
		last := out.Intervals[len(out.Intervals)-1]
		if last.Phase != "tail" || last.Actions[0].Count != 0 || len(last.Carried) != 1 || last.Carried[0].Phase != "steady" || last.Carried[0].Actions[0].Count != 1 {
			t.Errorf("last interval %+v", last)
		}
	})
}

// A count-bound run ramps down when its first user is done: what was
// scheduled before counts in the steady state, what was scheduled at or
// after in the ramp-down. User 0 does 3 actions of 100 ms (done at 0.3 s),
// user 1 3 actions of 300 ms (scheduled at 0, 0.3 and 0.6 s).
func TestCountBoundRampDownBeginsWhenTheFirstUserIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\ninterval: 1s\nclosed: {iterations: 3}\nactions: [{name: a}]\n")
		d := &sleepDriver{takeOf: func(u int) time.Duration { return time.Duration(100+200*u) * time.Millisecond }}
		out := run(t, context.Background(), p, d)
		sums := result.Summarize([]string{"a"}, 0, out.Intervals)
		st, down := result.Find(sums, "steady"), result.Find(sums, "ramp-down")
		if st == nil || down == nil || st.Total.Count != 4 || down.Total.Count != 2 {
			t.Fatalf("summaries %+v", sums)
		}
		if st.DurationS != 0.3 || down.DurationS != 0.6 || st.Total.Latency.MaxMs != 300 || st.Total.Latency.MinMs != 100 {
			t.Errorf("steady %v s (latency %+v), ramp-down %v s", st.DurationS, st.Total.Latency, down.DurationS)
		}
	})
}
