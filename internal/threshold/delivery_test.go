package threshold

import (
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
)

// mailRun is a mail run whose steady phase sent messages owing 20
// deliveries: 15 seen, 2 lost, 3 copies misdelivered and 4 duplicated;
// the ramp-up lost 1 more. A user's action named "duplicate" (a
// scenario may name its actions anything) must not be taken for the
// driver's event.
func mailRun() *result.Run {
	actions := []string{"duplicate", "deliver", "misdeliver", "duplicate"}
	iv := func(phase string, counts [4]uint64, classes [4]map[string]uint64) result.Interval {
		acts := make([]result.ActionInterval, len(actions))
		for i := range acts {
			var s metrics.ActionSnapshot
			s.Count = counts[i]
			for range counts[i] {
				s.Latency.Record(1000)
				s.Service.Record(1000)
			}
			acts[i] = result.FromSnapshot(&s)
			acts[i].Errors = classes[i]
		}
		return result.Interval{Phase: phase, DurationS: 1, UsersMean: 1, Actions: acts}
	}
	rep := result.Repetition{Intervals: []result.Interval{
		iv("ramp-up", [4]uint64{9, 1, 0, 0}, [4]map[string]uint64{nil, {"lost": 1}, nil, nil}),
		iv("steady", [4]uint64{7, 17, 3, 4}, [4]map[string]uint64{nil, {"lost": 2}, {"misdelivered": 3}, {"duplicate": 4}}),
	}}
	rep.Intervals[1].StartS = 1
	rep.Summaries = result.Summarize(actions, 3, rep.Intervals)
	return &result.Run{Schema: result.Schema, Meta: result.Meta{Driver: "mail", Actions: actions, Events: actions[1:]},
		Repetitions: []result.Repetition{rep}}
}

// loss, misdelivered and duplicated read the phase's deliveries: per
// recipient, each class apart; a driver that does not track a class has
// no such figure (a failure that says so, never a silent 0).
func TestDeliveryThresholds(t *testing.T) {
	run := mailRun()
	for _, tt := range []struct {
		text  string
		value float64
		pass  bool
	}{
		{"loss == 0", 3, false}, // the whole run: 1 in the ramp-up, 2 in the steady state
		{"steady: loss == 0", 2, false},
		{"ramp-up: loss == 0", 1, false},
		{"misdelivered == 0", 3, false},
		{"misdelivered <= 3", 3, true},
		{"duplicated == 0", 4, false},
		{"ramp-up: duplicated == 0", 0, true},
		{"ramp-up: misdelivered == 0", 0, true},
	} {
		o := eval(t, run, tt.text)[0]
		if o.Value != tt.value || o.Pass != tt.pass {
			t.Errorf("%s: %v (pass %v), want %v (pass %v): %s", tt.text, o.Value, o.Pass, tt.value, tt.pass, o.Message)
		}
	}
	web := mailRun()
	web.Meta.Driver, web.Meta.Events = "web", nil
	for _, text := range []string{"misdelivered == 0", "duplicated == 0"} {
		o := eval(t, web, text)[0]
		if o.Pass || !strings.Contains(o.Message, "the web driver does not track") {
			t.Errorf("%s on a web run: %+v", text, o)
		}
	}
	if _, err := Parse("deliver.misdelivered == 0"); err == nil || !strings.Contains(err.Error(), "not measured per action") {
		t.Errorf("per action: %v", err)
	}
}
