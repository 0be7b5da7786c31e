package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// RecordSchema names the format of Record. It changes when a reader of an
// older version could misread a newer file.
const RecordSchema = "throng.capacity/1"

// Record is a capacity search written down: the question (Config), the
// answer (Max, Status, Statement, first limit, scalability fit, knee,
// costs, notes) and every step with the search's reason for it, its
// figures, its verdict and its run's full result. It is what `throng
// capacity --out` writes and what reports read; numbers that may be
// missing or unbounded (NaN, ±Inf) are written as null (result.Num).
type Record struct {
	Schema string `json:"schema"`
	// Scenario, Target and StartedAt are the first step's run's.
	Scenario  string    `json:"scenario,omitempty"`
	Target    string    `json:"target,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Agents are the agents every step ran over, as given (throng capacity
	// --agents: each step one distributed run, merged); empty when this
	// process ran the steps. Each step's run names them again, with each
	// one's share (result.Run.Agents).
	Agents []string `json:"agents,omitempty"`
	// Population says how the steps' data set was prepared when it is
	// costly (mail, files): once, for the largest load, and checked before
	// each step; nil when each step prepared its own.
	Population *RecordPopulation `json:"population,omitempty"`
	Config     RecordConfig      `json:"config"`
	Max        Max               `json:"max"`
	Status     Status            `json:"status"`
	Statement  string            `json:"statement"`
	// FirstLimit is the resource that saturated first (nil: none named).
	FirstLimit *RecordLimit `json:"first_limit,omitempty"`
	USL        *RecordUSL   `json:"usl,omitempty"`
	Knee       *RecordKnee  `json:"knee,omitempty"`
	Costs      *RecordCosts `json:"costs,omitempty"`
	Notes      []string     `json:"notes,omitempty"`
	// Below and Above index the steps that decided the interval's ends;
	// -1 when there is none (see Answer).
	Below int `json:"below"`
	Above int `json:"above"`
	// ElapsedS is the search's wall time: the steps and the time before
	// each (a settle, the data set's preparation), as the time budget
	// counts it.
	ElapsedS float64      `json:"elapsed_s"`
	Steps    []RecordStep `json:"steps"`
}

// Max is the capacity: Value in Unit with its 95 % confidence interval
// [CI95[0], CI95[1]]. Value is null when there is none (the SLOs fail at
// --min, the generator was the limit, the search ran out before a
// bracket); CI95[0] is null when no load met the SLOs, CI95[1] when no
// upper end is known (above --max, generator-limited). Reach is the
// interval's relative half-width around Value.
type Max struct {
	Value result.Num    `json:"value"`
	Unit  string        `json:"unit"`
	CI95  [2]result.Num `json:"ci95"`
	Reach result.Num    `json:"reach"`
}

// RecordConfig is Config as written: the SLOs as text, durations in
// seconds, the defaults filled in.
type RecordConfig struct {
	SLOs          []string     `json:"slos"`
	Dimension     string       `json:"dimension"` // users, rate, speedup or a scenario variable
	Unit          string       `json:"unit"`      // users, per_s, x, or the variable
	Integer       bool         `json:"integer"`   // whole-number loads
	Min           float64      `json:"min"`
	Max           float64      `json:"max"`
	Precision     float64      `json:"precision"` // 0.05: ±5 %
	Budget        RecordBudget `json:"budget"`
	StepDurationS float64      `json:"step_duration_s"`
	MaxLengthS    float64      `json:"max_length_s"`
	WarmUpS       float64      `json:"warm_up_s"` // 0: no warm-up step
	Growth        float64      `json:"growth"`
	MaxRepeats    int          `json:"max_repeats"`
}

// RecordPopulation is a data set prepared once for a whole search: for
// the load Load (users Users), what was written and how, and the checks
// made before the steps (Checks; Failed of them found it damaged or gone,
// and those steps could not run).
type RecordPopulation struct {
	Load     float64 `json:"load"`
	Users    int     `json:"users"`
	Items    int64   `json:"items"`
	Bytes    int64   `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
	Method   string  `json:"method,omitempty"`
	Checks   int     `json:"checks"`
	Failed   int     `json:"failed"`
	// Why is the decision in words, as the report prints it.
	Why string `json:"why"`
}

// RecordSettle is one wait, between two steps, for the measured server
// (counters.processes) to settle: its CPU rate fell under Threshold cores
// (max(0.05, 1.5 × IdleCPU, the rate measured before the first step)) in
// ElapsedS, or did not within LimitS (TimedOut; CPU is its last rate over
// one second, null when none was measured).
type RecordSettle struct {
	ElapsedS  float64    `json:"elapsed_s"`
	TimedOut  bool       `json:"timed_out"`
	CPU       result.Num `json:"cpu"`
	Threshold float64    `json:"threshold"`
	IdleCPU   float64    `json:"idle_cpu"`
	LimitS    float64    `json:"limit_s"`
	// Why is the wait in words, as the report prints it.
	Why string `json:"why"`
}

// RecordBudget is the search's budget: steps, and wall time (0: none).
type RecordBudget struct {
	Steps int     `json:"steps"`
	TimeS float64 `json:"time_s"`
}

// RecordStep is one step: what the search asked and why, what was
// measured, the step's own verdict, and its run.
type RecordStep struct {
	Request  RecordRequest `json:"request"`
	ElapsedS float64       `json:"elapsed_s"`
	// BeforeS is the wall time between the step before's end (the
	// search's start) and this step's start (Step.Before).
	BeforeS float64 `json:"before_s,omitempty"`
	// Verdict is the step judged on its own figures: "warm-up", "met"
	// (every SLO clearly met), "failed" (one clearly failed), "near" (an
	// SLO within its noise of the limit) or "invalid" (Invalid says why).
	// The search combines the steps at one load before it decides.
	Verdict     string         `json:"verdict"`
	Invalid     []Invalid      `json:"invalid,omitempty"`
	SLOs        []RecordFigure `json:"slos"`
	Throughput  result.Num     `json:"throughput_per_s"`
	Offered     result.Num     `json:"offered_per_s"`
	Concurrency result.Num     `json:"concurrency"`
	Users       result.Num     `json:"users"`
	Latency     result.Latency `json:"latency"`
	Count       uint64         `json:"count"`
	Errors      uint64         `json:"errors"`
	Dropped     uint64         `json:"dropped"`
	// ErrorsByClass splits the errors by class; "lost" are the lost
	// deliveries (loss).
	ErrorsByClass map[string]uint64 `json:"errors_by_class,omitempty"`
	Counters      RecordCounters    `json:"counters"`
	// Settle is the wait for the measured server to settle before this
	// step (nil: none, as before the first step or with no server
	// measured).
	Settle *RecordSettle `json:"settle,omitempty"`
	// Run is the step's full result; null when the step recorded nothing.
	Run *result.Run `json:"run"`
}

// The verdicts of a step.
const (
	VerdictWarmUp  = "warm-up"
	VerdictMet     = "met"
	VerdictFailed  = "failed"
	VerdictNear    = "near"
	VerdictInvalid = "invalid"
)

// RecordRequest is a Request as written.
type RecordRequest struct {
	Kind      Kind    `json:"kind"`
	Load      float64 `json:"load"`
	DurationS float64 `json:"duration_s"`
	Why       string  `json:"why"` // the search's decision, in words
}

// RecordFigure is one SLO's figure in a step: Value ± HalfWidth (95 %),
// whether it meets the SLO, and whether clearly (its interval on one side
// of the limit).
type RecordFigure struct {
	SLO       string     `json:"slo"`
	Value     result.Num `json:"value"`
	HalfWidth result.Num `json:"half_width"`
	Pass      bool       `json:"pass"`
	Clear     bool       `json:"clear"`
}

// RecordCounters are Counters as written (null: not measured).
type RecordCounters struct {
	ServerCPU   result.Num `json:"server_cpu"`
	ServerCores result.Num `json:"server_cores"`
	// ServerCeiling is the most cores the server can use, ServerCeilingBy
	// what sets it ("machine", "pinned", "quota", "threads"; see Ceiling);
	// ServerThrottled the share of its CPU quota's periods in which the
	// quota stopped it (null: no quota). Records written before them read
	// as 0, "" and 0.
	ServerCeiling   result.Num `json:"server_ceiling"`
	ServerCeilingBy string     `json:"server_ceiling_by,omitempty"`
	ServerThrottled result.Num `json:"server_throttled"`
	DiskBusy        result.Num `json:"disk_busy"`
	Memory          result.Num `json:"memory"`
	Network         result.Num `json:"network"`
	MajorFaultsPerS result.Num `json:"major_faults_per_s"`
	GeneratorCPU    result.Num `json:"generator_cpu"`
}

// RecordLimit is a Limit as written, with its sentence (Text).
type RecordLimit struct {
	Resource string     `json:"resource"`
	Share    result.Num `json:"share"`
	Load     result.Num `json:"load"`
	Step     int        `json:"step"` // -1: none
	Unit     string     `json:"unit"`
	Detail   string     `json:"detail,omitempty"`
	Text     string     `json:"text"`
}

// RecordUSL is a USL fit as written (Peak null: no peak, β = 0).
type RecordUSL struct {
	Lambda         result.Num `json:"lambda"`
	Alpha          result.Num `json:"alpha"`
	Beta           result.Num `json:"beta"`
	Peak           result.Num `json:"peak"`
	PeakThroughput result.Num `json:"peak_throughput"`
	RMSE           result.Num `json:"rmse"`
	Points         int        `json:"points"`
}

// RecordKnee is a Knee as written.
type RecordKnee struct {
	Load       result.Num `json:"load"`
	Throughput result.Num `json:"throughput_per_s"`
	Vertex     result.Num `json:"vertex"`
}

// RecordCosts are Costs as written.
type RecordCosts struct {
	Load           result.Num `json:"load"`
	Unit           string     `json:"unit"`
	CPUMsPerAction result.Num `json:"cpu_ms_per_action"`
	CoresPerUnit   result.Num `json:"cores_per_unit"`
	UnitsPerCore   result.Num `json:"units_per_core"`
}

// NewRecord writes a search down: its configuration, its steps with the
// run of each (runs[i] is steps[i]'s; missing or nil: none kept) and its
// answer (from Decide, or Conclude for a search cut short).
func NewRecord(cfg Config, steps []Step, runs []*result.Run, ans Answer) Record {
	cfg = cfg.withDefaults()
	rec := Record{Schema: RecordSchema, Config: ConfigRecord(cfg), Status: ans.Status, Statement: ans.Statement,
		Notes: ans.Notes, Below: ans.Below, Above: ans.Above, ElapsedS: ans.Elapsed.Seconds(),
		Max: Max{Value: result.Num(ans.Capacity), Unit: cfg.Dimension.Unit,
			CI95: [2]result.Num{result.Num(ans.Low), result.Num(ans.High)}, Reach: result.Num(ans.Reach)}}
	if l := ans.FirstLimit; l.Resource != "" {
		rec.FirstLimit = &RecordLimit{Resource: l.Resource, Share: result.Num(l.Share), Load: result.Num(l.Load), Step: l.Step,
			Unit: l.Unit, Detail: l.Detail, Text: l.String()}
	}
	if u := ans.USL; u != nil {
		rec.USL = &RecordUSL{Lambda: result.Num(u.Lambda), Alpha: result.Num(u.Alpha), Beta: result.Num(u.Beta), Peak: result.Num(u.Peak),
			PeakThroughput: result.Num(u.PeakThroughput), RMSE: result.Num(u.RMSE), Points: u.Points}
	}
	if k := ans.Knee; k != nil {
		rec.Knee = &RecordKnee{Load: result.Num(k.Load), Throughput: result.Num(k.Throughput), Vertex: result.Num(k.Vertex)}
	}
	if c := ans.Costs; c != nil {
		rec.Costs = &RecordCosts{Load: result.Num(c.Load), Unit: c.Unit, CPUMsPerAction: result.Num(c.CPUMsPerAction),
			CoresPerUnit: result.Num(c.CoresPerUnit), UnitsPerCore: result.Num(c.UnitsPerCore)}
	}
	for i := range steps {
		var run *result.Run
		if i < len(runs) {
			run = runs[i]
		}
		if run != nil && rec.Scenario == "" && rec.StartedAt.IsZero() {
			rec.Scenario, rec.Target, rec.StartedAt = run.Meta.Scenario, run.Meta.Target, run.Meta.StartedAt
		}
		rec.Steps = append(rec.Steps, StepRecord(cfg, &steps[i], run))
	}
	return rec
}

// ConfigRecord is a configuration as written, its defaults filled in.
func ConfigRecord(cfg Config) RecordConfig {
	cfg = cfg.withDefaults()
	rc := RecordConfig{Dimension: cfg.Dimension.Name, Unit: cfg.Dimension.Unit, Integer: cfg.Dimension.Integer,
		Min: cfg.Min, Max: cfg.Max, Precision: cfg.Precision, Budget: RecordBudget{Steps: cfg.MaxSteps, TimeS: cfg.MaxTime.Seconds()},
		StepDurationS: cfg.StepDuration.Seconds(), MaxLengthS: cfg.MaxLength.Seconds(), Growth: cfg.Growth, MaxRepeats: cfg.MaxRepeats}
	if !cfg.NoWarmUp {
		rc.WarmUpS = cfg.WarmUp.Seconds()
	}
	for _, t := range cfg.SLOs {
		rc.SLOs = append(rc.SLOs, t.Text)
	}
	return rc
}

// StepRecord writes one step down, with its run (nil: none kept): the
// live line of a search renders it as soon as the step is done.
func StepRecord(cfg Config, s *Step, run *result.Run) RecordStep {
	cfg = cfg.withDefaults()
	c := &s.Counters
	rs := RecordStep{
		Request:  RecordRequest{Kind: s.Kind, Load: s.Load, DurationS: s.Duration.Seconds(), Why: s.Why},
		ElapsedS: s.Elapsed.Seconds(), BeforeS: s.Before.Seconds(), Verdict: stepVerdict(cfg, s), Invalid: s.Invalid,
		Throughput: result.Num(s.Throughput), Offered: result.Num(s.Offered), Concurrency: result.Num(s.Concurrency),
		Users: result.Num(s.Users), Latency: s.Latency, Count: s.Count, Errors: s.Errors, Dropped: s.Dropped,
		ErrorsByClass: s.ErrorsByClass, Run: run,
		Counters: RecordCounters{ServerCPU: result.Num(c.ServerCPU), ServerCores: result.Num(c.ServerCores),
			ServerCeiling: result.Num(c.ServerCeiling), ServerCeilingBy: c.ServerCeilingBy, ServerThrottled: result.Num(c.ServerThrottled),
			DiskBusy: result.Num(c.DiskBusy), Memory: result.Num(c.Memory), Network: result.Num(c.Network),
			MajorFaultsPerS: result.Num(c.MajorFaultsPerS), GeneratorCPU: result.Num(c.GeneratorCPU)},
	}
	for k, t := range cfg.SLOs {
		f := Figure{Value: math.NaN(), HalfWidth: math.NaN()}
		if k < len(s.SLOs) {
			f = s.SLOs[k]
		}
		pass, clear, _ := judge(t, f)
		rs.SLOs = append(rs.SLOs, RecordFigure{SLO: t.Text, Value: result.Num(f.Value), HalfWidth: result.Num(f.HalfWidth), Pass: pass, Clear: clear})
	}
	return rs
}

// stepVerdict judges a step on its own figures (see RecordStep.Verdict).
func stepVerdict(cfg Config, s *Step) string {
	switch {
	case s.Kind == WarmUp:
		return VerdictWarmUp
	case !s.Valid():
		return VerdictInvalid
	}
	all := true
	for k, t := range cfg.SLOs {
		f := Figure{Value: math.NaN(), HalfWidth: math.NaN()}
		if k < len(s.SLOs) {
			f = s.SLOs[k]
		}
		pass, clear, _ := judge(t, f)
		if !pass && clear {
			return VerdictFailed
		}
		all = all && pass && clear
	}
	if all {
		return VerdictMet
	}
	return VerdictNear
}

// WriteRecord writes a record as JSON, indented.
func WriteRecord(w io.Writer, rec *Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("capacity record: %w", err)
	}
	return nil
}

// WriteRecordFile writes a record to path atomically (result.WriteAtomic).
func WriteRecordFile(path string, rec *Record) error {
	return result.WriteAtomic(path, func(w io.Writer) error { return WriteRecord(w, rec) })
}

// statusKeys are the statuses as records write them.
var statusKeys = [...]string{"found", "fails-at-min", "above-max", "generator-limited", "budget",
	"imprecise", "unmeasurable", "could-not-run"}

// MarshalText writes a status as its key ("found", "fails-at-min", ...).
func (s Status) MarshalText() ([]byte, error) {
	if int(s) < 0 || int(s) >= len(statusKeys) {
		return nil, fmt.Errorf("capacity: no status %d", int(s))
	}
	return []byte(statusKeys[s]), nil
}

// UnmarshalText reads a status's key.
func (s *Status) UnmarshalText(b []byte) error {
	for i, k := range statusKeys {
		if string(b) == k {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown status %q (known: %v)", b, statusKeys)
}
