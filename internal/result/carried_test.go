package result

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// carriedRun is a repetition whose actions finish after the phase they were
// scheduled in: 10 actions of the ramp-up finish in the steady state's
// first interval, 7 of the steady state's in the tail after the plan's end
// (with their 5 s latencies), and 4 losses of the steady state are found in
// the drain.
func carriedRun() []Interval {
	up := interval(0, "ramp-up", 20, 1000)
	s1 := interval(1, "steady", 30, 2000)
	s1.Carried = []PhaseActions{{Phase: "ramp-up", Actions: interval(0, "", 10, 9000).Actions}}
	s2 := interval(2, "steady", 30, 2000)
	tail := Interval{Index: 3, StartS: 3, DurationS: 1, Phase: "tail", Actions: []ActionInterval{{}},
		Carried: []PhaseActions{{Phase: "steady", Actions: interval(0, "", 7, 5_000_000).Actions}}}
	lost := ActionInterval{Count: 4, Errors: map[string]uint64{"lost": 4}}
	drain := Interval{Index: 4, StartS: 4, DurationS: 0.5, Phase: "drain", Actions: []ActionInterval{{}},
		Carried: []PhaseActions{{Phase: "steady", Actions: []ActionInterval{lost}}}}
	return []Interval{up, s1, s2, tail, drain}
}

// A phase's summary holds the actions scheduled in it, wherever they
// finished, over the phase's own time; the tail and a drain in which
// nothing counts have no summary; "all" holds everything over the whole
// time.
func TestSummariesCountActionsInThePhaseOfTheirStart(t *testing.T) {
	t.Parallel()
	sums := Summarize([]string{"page"}, 0, carriedRun())
	if len(sums) != 3 || sums[0].Phase != "ramp-up" || sums[1].Phase != "steady" || sums[2].Phase != All {
		var names []string
		for _, s := range sums {
			names = append(names, s.Phase)
		}
		t.Fatalf("phases %v, want ramp-up, steady, all", names)
	}
	up, st, all := sums[0].Total, sums[1].Total, sums[2].Total
	if up.Count != 30 || up.RatePerS != 30 || up.Latency.MaxMs != 9 {
		t.Errorf("ramp-up: %d actions at %v/s, max %v ms; want 30 at 30/s, 9 ms", up.Count, up.RatePerS, up.Latency.MaxMs)
	}
	if st.Count != 71 || sums[1].DurationS != 2 || st.RatePerS != 35.5 || st.ErrorsByClass["lost"] != 4 || st.Latency.MaxMs < 4980 || st.Timed() != 67 {
		t.Errorf("steady: %d actions over %v s (%v/s), lost %d, max %v ms, %d timed", st.Count, sums[1].DurationS, st.RatePerS, st.ErrorsByClass["lost"], st.Latency.MaxMs, st.Timed())
	}
	if all.Count != 101 || sums[2].DurationS != 4.5 {
		t.Errorf("all: %d actions over %v s", all.Count, sums[2].DurationS)
	}
	// A drain in which something counts (an event with no cause) is shown.
	ivs := carriedRun()
	ivs[4].Actions = []ActionInterval{{Count: 2, Errors: map[string]uint64{"lost": 2}}}
	if d := Find(Summarize([]string{"page"}, 0, ivs), "drain"); d == nil || d.Total.Count != 2 || d.DurationS != 0.5 {
		t.Errorf("drain %+v", d)
	}
}

// Carried actions go through the journal and the result file unchanged,
// and Finished adds them back for the time series.
func TestCarriedRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.journal.jsonl")
	j, err := CreateJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Meta(&Meta{Scenario: "demo", Actions: []string{"page"}, StartedAt: time.Unix(1700000000, 0)})
	j.Repetition(0, time.Unix(1700000000, 0))
	ivs := carriedRun()
	for i := range ivs {
		j.Interval(0, &ivs[i])
	}
	j.RepetitionEnd(&Repetition{Index: 0, ElapsedS: 4.5})
	j.End(false, "")
	j.Close()
	run, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(Summarize([]string{"page"}, 0, ivs))
	got, _ := json.Marshal(run.Repetitions[0].Summaries)
	if !bytes.Equal(got, want) {
		t.Errorf("summaries read back differ:\n%s\n%s", got, want)
	}
	if f := run.Repetitions[0].Intervals[1].Finished(); f[0].Count != 40 || f[0].Latency.N != 40 {
		t.Errorf("finished in interval 1: %d", f[0].Count)
	}
}
