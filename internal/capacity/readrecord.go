package capacity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// MaxRecordBytes bounds a record read: sixteen steps of long runs are tens
// of megabytes; a larger file is not a capacity record.
const MaxRecordBytes = 1 << 30

// ReadRecordFile reads a record from a file (regular files only: a FIFO
// or a device would block or never end). A file that is not a capacity
// record, or is damaged, gives a *result.FormatError naming it (bad input:
// exit 2); one that cannot be read gives the system's error.
func ReadRecordFile(path string) (*Record, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &result.FormatError{Path: path, Err: errors.New("not a regular file: a capacity record is a file")}
	}
	rec, err := ReadRecord(f)
	var fe *result.FormatError
	if errors.As(err, &fe) && fe.Path == "" {
		fe.Path = path
	}
	return rec, err
}

// ReadRecord reads a record strictly: JSON of schema RecordSchema with no
// unknown field, its configuration valid, every step's request, figures,
// verdict and reasons of a known kind and consistent with the
// configuration, every number within bounds, and every step's run a valid
// run result (result.Read). Bad input gives a *result.FormatError that
// says where (a line and column for JSON that does not parse, a path such
// as steps[3].request.load otherwise) and why.
func ReadRecord(r io.Reader) (*Record, error) {
	data, err := io.ReadAll(io.LimitReader(bufio.NewReader(r), MaxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return &result.FormatError{Err: fmt.Errorf(format, args...)}
	}
	if len(data) > MaxRecordBytes {
		return nil, bad("larger than %d MiB: not a capacity record", MaxRecordBytes>>20)
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, bad("not a capacity record: %s", jsonErr(data, err))
	}
	switch {
	case probe.Schema == RecordSchema:
	case strings.HasPrefix(probe.Schema, "throng.capacity/"):
		return nil, bad("capacity record schema %s is not %s, the one this throng reads", probe.Schema, RecordSchema)
	case strings.HasPrefix(probe.Schema, "throng.run/"):
		return nil, bad("a run's result (schema %s), not a capacity record", probe.Schema)
	default:
		return nil, bad("not a capacity record (schema %q, want %s)", probe.Schema, RecordSchema)
	}
	var aux struct {
		Record
		Steps []json.RawMessage `json:"steps"`
	}
	if err := strict(data, &aux); err != nil {
		return nil, bad("%s", jsonErr(data, err))
	}
	rec := aux.Record
	rec.Steps = make([]RecordStep, 0, len(aux.Steps))
	for i, raw := range aux.Steps {
		var st struct {
			RecordStep
			Run json.RawMessage `json:"run"`
		}
		if err := strict(raw, &st); err != nil {
			return nil, bad("steps[%d]: %s", i, jsonErr(raw, err))
		}
		s := st.RecordStep
		if len(st.Run) > 0 && string(st.Run) != "null" {
			run, err := result.Read(bytes.NewReader(st.Run))
			if err != nil {
				return nil, bad("steps[%d].run: %v", i, err)
			}
			s.Run = run
		}
		rec.Steps = append(rec.Steps, s)
	}
	if err := rec.check(); err != nil {
		return nil, bad("%v", err)
	}
	return &rec, nil
}

// strict decodes one JSON value, refusing unknown fields and anything
// after the value.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more data after the record")
	}
	return nil
}

// jsonErr says where in data a JSON error is (line:column) when it knows.
func jsonErr(data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	// The offset is past the byte at fault.
	if off--; off < 0 || off >= int64(len(data)) {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

// Config returns the configuration the record was searched with, its SLOs
// parsed; an error says what is wrong with it.
func (rc RecordConfig) Config() (Config, error) {
	cfg := Config{Dimension: Dimension{Name: rc.Dimension, Unit: rc.Unit, Integer: rc.Integer}, Min: rc.Min, Max: rc.Max,
		Precision: rc.Precision, MaxSteps: rc.Budget.Steps, Growth: rc.Growth, MaxRepeats: rc.MaxRepeats, NoWarmUp: rc.WarmUpS == 0}
	for _, d := range []struct {
		name string
		s    float64
		to   *time.Duration
	}{{"budget.time_s", rc.Budget.TimeS, &cfg.MaxTime}, {"step_duration_s", rc.StepDurationS, &cfg.StepDuration},
		{"max_length_s", rc.MaxLengthS, &cfg.MaxLength}, {"warm_up_s", rc.WarmUpS, &cfg.WarmUp}} {
		if !(d.s >= 0 && d.s <= result.MaxSeconds) {
			return cfg, fmt.Errorf("config.%s: %g s is not a duration", d.name, d.s)
		}
		*d.to = time.Duration(d.s * float64(time.Second))
	}
	if rc.Dimension == "" || rc.Unit == "" {
		return cfg, errors.New("config: the dimension and its unit are missing")
	}
	for i, s := range rc.SLOs {
		t, err := threshold.Parse(s)
		if err != nil {
			return cfg, fmt.Errorf("config.slos[%d]: %v", i, err)
		}
		cfg.SLOs = append(cfg.SLOs, t)
	}
	// Zero fields would take their defaults: a record has them filled.
	if cfg.Precision == 0 || cfg.MaxSteps == 0 || cfg.StepDuration == 0 || cfg.MaxLength == 0 || cfg.Growth == 0 {
		return cfg, errors.New("config: precision, budget.steps, step_duration_s, max_length_s and growth must be set")
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		return cfg, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return cfg, nil
}

var (
	kinds        = []Kind{WarmUp, Bracket, Bisect, Repeat, Flank}
	invalidKinds = []InvalidKind{GeneratorBound, Unsteady, FewSamples, Partial, Missing}
	verdicts     = []string{VerdictWarmUp, VerdictMet, VerdictFailed, VerdictNear, VerdictInvalid}
)

// check verifies what readers of a record rely on (see ReadRecord).
func (rec *Record) check() error {
	cfg, err := rec.Config.Config()
	if err != nil {
		return err
	}
	n := len(rec.Steps)
	load := func(x float64) bool { return x > 0 && x <= result.MaxValue }
	okNum := func(x result.Num) bool { return math.IsNaN(float64(x)) || math.Abs(float64(x)) <= result.MaxValue }
	okSec := func(s float64) bool { return s >= 0 && s <= result.MaxSeconds }
	switch {
	case int(rec.Status) < 0 || int(rec.Status) >= len(statusKeys):
		return fmt.Errorf("status %d", int(rec.Status))
	case rec.Max.Unit != rec.Config.Unit:
		return fmt.Errorf("max.unit %q is not the dimension's unit %q", rec.Max.Unit, rec.Config.Unit)
	case !okNum(rec.Max.Value) || !okNum(rec.Max.CI95[0]) || !okNum(rec.Max.CI95[1]) || !okNum(rec.Max.Reach):
		return errors.New("max: a number out of bounds")
	case rec.Max.CI95[0] > rec.Max.CI95[1] || rec.Max.Value < rec.Max.CI95[0] || rec.Max.Value > rec.Max.CI95[1]:
		// (comparisons with NaN, a missing end, are false)
		return fmt.Errorf("max: %g is not in its interval [%g, %g]", rec.Max.Value, rec.Max.CI95[0], rec.Max.CI95[1])
	case rec.Below < -1 || rec.Below >= n || rec.Above < -1 || rec.Above >= n:
		return fmt.Errorf("below %d or above %d is not a step (there are %d)", rec.Below, rec.Above, n)
	case !okSec(rec.ElapsedS):
		return fmt.Errorf("elapsed_s %g", rec.ElapsedS)
	}
	if l := rec.FirstLimit; l != nil && (l.Step < -1 || l.Step >= n || !okNum(l.Share) || !okNum(l.Load)) {
		return fmt.Errorf("first_limit: step %d of %d, or a number out of bounds", l.Step, n)
	}
	for _, x := range []any{rec.USL, rec.Knee, rec.Costs} {
		if !numsOK(x) {
			return fmt.Errorf("%T: a number out of bounds", x)
		}
	}
	for i := range rec.Steps {
		s := &rec.Steps[i]
		where := fmt.Sprintf("steps[%d]", i)
		switch {
		case !slices.Contains(kinds, s.Request.Kind):
			return fmt.Errorf("%s.request.kind %q: not a kind of step (known: %v)", where, s.Request.Kind, kinds)
		case !load(s.Request.Load):
			return fmt.Errorf("%s.request.load %g: a load is positive and at most %g", where, s.Request.Load, result.MaxValue)
		case !okSec(s.Request.DurationS) || !okSec(s.ElapsedS) || !okSec(s.BeforeS):
			return fmt.Errorf("%s: a duration of %g s, an elapsed time of %g s or a time before of %g s", where, s.Request.DurationS, s.ElapsedS, s.BeforeS)
		case !slices.Contains(verdicts, s.Verdict):
			return fmt.Errorf("%s.verdict %q: not a verdict (known: %v)", where, s.Verdict, verdicts)
		case (s.Verdict == VerdictInvalid) != (len(s.Invalid) > 0) && s.Verdict != VerdictWarmUp:
			return fmt.Errorf("%s: verdict %q with %d reasons to be invalid", where, s.Verdict, len(s.Invalid))
		case len(s.SLOs) != len(cfg.SLOs):
			return fmt.Errorf("%s.slos: %d figures for %d SLOs", where, len(s.SLOs), len(cfg.SLOs))
		case !numsOK(s.Counters) || !numsOK(s.Latency) || !okNum(s.Throughput) || !okNum(s.Offered) || !okNum(s.Concurrency) || !okNum(s.Users):
			return fmt.Errorf("%s: a number out of bounds", where)
		}
		for k, iv := range s.Invalid {
			if !slices.Contains(invalidKinds, iv.Kind) {
				return fmt.Errorf("%s.invalid[%d].kind %q: not a reason (known: %v)", where, k, iv.Kind, invalidKinds)
			}
		}
		for k, f := range s.SLOs {
			if f.SLO != cfg.SLOs[k].Text {
				return fmt.Errorf("%s.slos[%d]: %q is not the SLO %q of the configuration", where, k, f.SLO, cfg.SLOs[k].Text)
			}
			if !okNum(f.Value) || !okNum(f.HalfWidth) || f.HalfWidth < 0 {
				return fmt.Errorf("%s.slos[%d]: figure %g ± %g", where, k, f.Value, f.HalfWidth)
			}
		}
	}
	return nil
}

// numsOK reports whether every number of a flat struct (or a pointer to
// one; nil is fine) is missing (NaN) or within result.MaxValue.
func numsOK(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return string(b) == "null"
	}
	for _, x := range m {
		if f, ok := x.(float64); ok && math.Abs(f) > result.MaxValue {
			return false
		}
	}
	return true
}

// IsRecordFile reports whether the file at path is a capacity search's
// record: a JSON object whose first key is "schema" with the value
// RecordSchema (as WriteRecord writes it). Only its first bytes are read;
// a file that cannot be read is not one (its reader says why).
func IsRecordFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 4096))
	for _, want := range []any{json.Delim('{'), "schema", RecordSchema} {
		tok, err := dec.Token()
		if err != nil || tok != want {
			return false
		}
	}
	return true
}
