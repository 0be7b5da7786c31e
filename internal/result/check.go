package result

import (
	"fmt"
	"math"
	"reflect"
)

// Bounds of what a run can hold: a run read from a file holding more is
// damaged or not throng's, and is refused before a report loops over a
// thousand-year time axis or a summary overflows to infinity (which JSON
// cannot even write).
const (
	// MaxSeconds bounds every offset and duration: about 31 years.
	MaxSeconds = 1e9
	// MinDuration is the shortest interval but an empty one: the clock's
	// resolution, a nanosecond.
	MinDuration = 1e-9
	// MaxValue bounds the magnitude of every other number: times a duration
	// and summed over any number of intervals, it stays finite.
	MaxValue = 1e18
)

// check verifies what the reports rely on: every interval has one entry per
// action of the run, the events are among the actions, offsets and
// durations are within [0, MaxSeconds] (an interval lasts 0 or at least
// MinDuration), and every other number is finite and within MaxValue.
func (run *Run) check() error {
	m := &run.Meta
	if len(m.Events) > len(m.Actions) {
		return &FormatError{Err: fmt.Errorf("%d event actions of %d actions", len(m.Events), len(m.Actions))}
	}
	if !seconds(m.IntervalS) || !seconds(m.MaxDurationS) {
		return &FormatError{Err: fmt.Errorf("meta: an interval of %g s or a max_duration of %g s", m.IntervalS, m.MaxDurationS)}
	}
	for _, ph := range m.Phases {
		if !seconds(ph.StartS) || (ph.EndS != -1 && !seconds(ph.EndS)) {
			return &FormatError{Err: fmt.Errorf("meta: phase %q from %g s to %g s", ph.Name, ph.StartS, ph.EndS)}
		}
	}
	if err := numbers(reflect.ValueOf(run.Aggregate)); err != nil {
		return &FormatError{Err: fmt.Errorf("aggregate: %v", err)}
	}
	for _, rep := range run.Repetitions {
		where := fmt.Sprintf("repetition %d", rep.Index+1)
		if !seconds(rep.ElapsedS) || !seconds(rep.DrainS) {
			return &FormatError{Err: fmt.Errorf("%s: elapsed %g s, drain %g s", where, rep.ElapsedS, rep.DrainS)}
		}
		if err := numbers(reflect.ValueOf(rep.Summaries)); err != nil {
			return &FormatError{Err: fmt.Errorf("%s, summaries: %v", where, err)}
		}
		for _, iv := range rep.Intervals {
			where := fmt.Sprintf("%s, interval %d", where, iv.Index)
			switch {
			case len(iv.Actions) != len(m.Actions):
				return &FormatError{Err: fmt.Errorf("%s: %d actions, where the run has %d", where, len(iv.Actions), len(m.Actions))}
			case !seconds(iv.StartS) || !seconds(iv.DurationS) || (iv.DurationS > 0 && iv.DurationS < MinDuration) || !seconds(iv.StartS+iv.DurationS):
				return &FormatError{Err: fmt.Errorf("%s: from %g s, lasting %g s", where, iv.StartS, iv.DurationS)}
			}
			if err := numbers(reflect.ValueOf(&iv)); err != nil {
				return &FormatError{Err: fmt.Errorf("%s: %v", where, err)}
			}
		}
	}
	return nil
}

// seconds reports whether s is an offset or a duration a run can have.
func seconds(s float64) bool { return s >= 0 && s <= MaxSeconds }

var numType = reflect.TypeOf(Num(0))

// numbers checks every float in v (structs, slices, maps, pointers): finite
// and within MaxValue; a Num may also be NaN (a value that does not exist).
func numbers(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		f := v.Float()
		if v.Type() == numType && math.IsNaN(f) {
			return nil
		}
		if math.IsNaN(f) || math.Abs(f) > MaxValue {
			return fmt.Errorf("the number %g", f)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return numbers(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := numbers(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.String || v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := numbers(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if k := v.Type().Elem().Kind(); k != reflect.Float64 && k != reflect.Struct && k != reflect.Slice && k != reflect.Pointer {
			return nil
		}
		for it := v.MapRange(); it.Next(); {
			if err := numbers(it.Value()); err != nil {
				return fmt.Errorf("%v (%v)", err, it.Key())
			}
		}
	}
	return nil
}
