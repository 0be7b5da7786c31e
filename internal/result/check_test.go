package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A run read from a file may hold only what a run can: one entry per action
// in every interval, offsets and durations within [0, MaxSeconds] (an
// interval lasting 0 or at least a nanosecond), every other number finite
// and within MaxValue. Anything else is refused as bad input, saying where,
// before a report loops over a thousand-year axis or a summary overflows.
func TestReadRefusesWhatARunCannotHold(t *testing.T) {
	t.Parallel()
	valid := func() *Run {
		run := &Run{Schema: Schema, Meta: Meta{Scenario: "x", Actions: []string{"page"}, IntervalS: 1,
			Phases: []PhaseMeta{{Name: "steady", StartS: 0, EndS: -1}}}}
		rep := Repetition{ElapsedS: 3}
		for i := range 3 {
			rep.Intervals = append(rep.Intervals, counterful(i))
		}
		rep.Summaries = Summarize(run.Meta.Actions, 0, rep.Intervals)
		run.Repetitions = []Repetition{rep}
		run.Aggregate = &Aggregate{Phases: []AggregatePhase{{Phase: "all", Measures: []Measure{{Name: "rate_per_s", Values: []Num{1, 2}}}}}}
		return run
	}
	read := func(run *Run) error {
		b, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Read(bytes.NewReader(b))
		return err
	}
	if err := read(valid()); err != nil {
		t.Fatalf("a valid run (with NaN, null, server rows) refused: %v", err)
	}
	for _, tt := range []struct {
		name   string
		change func(r *Run)
		want   string
	}{
		{"negative start", func(r *Run) { r.Repetitions[0].Intervals[1].StartS = -1e300 }, "repetition 1, interval 1: from -1e+300 s"},
		{"start past the bound", func(r *Run) { r.Repetitions[0].Intervals[1].StartS = 2e9 }, "interval 1: from 2e+09 s"},
		{"end past the bound", func(r *Run) { r.Repetitions[0].Intervals[1].StartS, r.Repetitions[0].Intervals[1].DurationS = 9e8, 2e8 }, "lasting 2e+08 s"},
		{"negative duration", func(r *Run) { r.Repetitions[0].Intervals[2].DurationS = -5 }, "interval 2: from 2 s, lasting -5 s"},
		{"subnormal duration", func(r *Run) { r.Repetitions[0].Intervals[0].DurationS = 1e-320 }, "lasting 1e-320 s"},
		{"a counter past the bound", func(r *Run) { r.Repetitions[0].Intervals[0].Counters[0].Values["extra"] = 1e308 }, "interval 0: the number 1e+308 (extra)"},
		{"users past the bound", func(r *Run) { r.Repetitions[0].Intervals[0].UsersMean = -1e19 }, "the number -1e+19"},
		{"a thread busier than a number", func(r *Run) { r.Repetitions[0].Intervals[0].Client.ThreadBusy = []float64{1e300} }, "the number 1e+300"},
		{"a summary past the bound", func(r *Run) { r.Repetitions[0].Summaries[0].Total.RatePerS = 1e308 }, "repetition 1, summaries: the number 1e+308"},
		{"an aggregate past the bound", func(r *Run) { r.Aggregate.Phases[0].Measures[0].Values[1] = 1e300 }, "aggregate: the number 1e+300"},
		{"elapsed", func(r *Run) { r.Repetitions[0].ElapsedS = -1 }, "repetition 1: elapsed -1 s"},
		{"a phase", func(r *Run) { r.Meta.Phases[0].EndS = -5 }, `phase "steady" from 0 s to -5 s`},
		{"the interval", func(r *Run) { r.Meta.IntervalS = 1e300 }, "meta: an interval of 1e+300 s"},
		{"actions", func(r *Run) { r.Meta.Actions = append(r.Meta.Actions, "other") }, "interval 0: 1 actions, where the run has 2"},
		{"events", func(r *Run) { r.Meta.Events = []string{"a", "b"} }, "2 event actions of 1 actions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := valid()
			tt.change(run)
			err := read(run)
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("read: %v; want a FormatError saying %q", err, tt.want)
			}
		})
	}
}
