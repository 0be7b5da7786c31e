// Package result is the record of a run: versioned JSON types, the journal
// written while the run goes on, and the per-phase summaries computed from
// the recorded intervals. Reports read results and nothing else.
package result

import (
	"fmt"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/textfmt"
)

// Schema names the format of Run. It changes when a reader of an older
// version could misread a newer file: version 2 counts every action in the
// phase of its scheduled start and keeps, in an interval, those of other
// phases apart (Interval.Carried), which a reader of version 1 would not
// add. Version 1 results still read (each of their actions counts in the
// interval and phase it finished in).
const Schema = "throng.run/2"

// schema1 is the first version of the format, still read.
const schema1 = "throng.run/1"

// Run is one invocation of `throng run`: its metadata and its repetitions.
type Run struct {
	Schema      string       `json:"schema"`
	Meta        Meta         `json:"meta"`
	Repetitions []Repetition `json:"repetitions"`
	// Aggregate summarizes the repetitions (trimmed mean, median, min, max)
	// when there are several.
	Aggregate *Aggregate `json:"aggregate,omitempty"`
	// Partial is true when the run did not finish as planned (interrupted,
	// killed, bounded by max_duration); Reason says why in words.
	Partial bool   `json:"partial"`
	Reason  string `json:"reason,omitempty"`
	// Agents describes each load generator of a distributed or merged run,
	// in segment order; empty for a run of one process.
	Agents []Agent `json:"agents,omitempty"`
	// Valid is true when every repetition's Validity is; Thresholds are
	// the outcomes of the run's thresholds. Both are set when the run ends.
	Valid      *bool              `json:"valid,omitempty"`
	Thresholds []ThresholdOutcome `json:"thresholds,omitempty"`
	// Outputs are the live outputs the run fed (--prometheus, --output),
	// with the intervals each got and lost.
	Outputs []Output `json:"outputs,omitempty"`
}

// Output is what became of one live output of a run (docs/outputs.md):
// the intervals it was given and took, and the ones it lost. A slow or
// failing output is dropped (Dropped, Reason) and never slows the run.
type Output struct {
	Name      string `json:"name"` // as given, like "csv=run.csv"; no secret
	Delivered uint64 `json:"delivered"`
	Lost      uint64 `json:"lost"`
	Dropped   bool   `json:"dropped"`
	Reason    string `json:"reason,omitempty"`
}

// ThresholdOutcome is one threshold judged on one phase, as kept in the
// result (see package threshold).
type ThresholdOutcome struct {
	Threshold string `json:"threshold"` // as written
	Phase     string `json:"phase"`
	Value     Num    `json:"value"` // the measured figure in Unit; null when missing
	Limit     Num    `json:"limit"`
	Unit      string `json:"unit"` // ms, ratio, 1/s, count, bool
	Pass      bool   `json:"pass"`
	Message   string `json:"message"`
	// Repetitions holds each repetition's figure when there are several.
	Repetitions []Num `json:"repetitions,omitempty"`
	// Default marks a family's default threshold (files: all: corrupt ==
	// 0), judged without being written in the scenario.
	Default bool `json:"default,omitempty"`
	// Expr is the threshold without the phases it was written with
	// ("page.p95 < 200ms"): Phase says which one this outcome judged.
	Expr string `json:"expr,omitempty"`
}

// Shown is the outcome as reports show it: the phase judged, then the
// threshold's expression ("steady: p95 < 500ms", "ramp-up: p95 < 1s" for
// "ramp-up,steady: p95 < 1s"), marked "(default)" when it is a family's
// default.
func (o ThresholdOutcome) Shown() string {
	expr := o.Expr
	if expr == "" { // written before expr was kept: the text, unless it names the phase first
		expr = o.Threshold
		if rest, ok := strings.CutPrefix(expr, o.Phase+":"); ok {
			expr = strings.TrimSpace(rest)
		}
	}
	s := o.Phase + ": " + expr
	if o.Default {
		s += " (default)"
	}
	return s
}

// Agent is one load generator's share of a distributed run.
type Agent struct {
	Name        string  `json:"name"`    // address or file it came from
	Segment     string  `json:"segment"` // k/n, with weights when weighted
	Host        Host    `json:"host"`
	Users       int     `json:"users"`         // users of its segment
	StartSkewMs float64 `json:"start_skew_ms"` // its start minus the agreed start
	// Per repetition: its client CPU (mean cores), client-bound intervals,
	// and whether its share stopped early, and why.
	ClientCPUMean  []float64 `json:"client_cpu_cores_mean"`
	BoundIntervals []int     `json:"client_bound_intervals"`
	Partial        bool      `json:"partial"`
	Reason         string    `json:"reason,omitempty"`
}

// Meta describes what was run, where and how.
type Meta struct {
	Scenario     string            `json:"scenario"`
	Description  string            `json:"description,omitempty"`
	Label        string            `json:"label,omitempty"`
	File         string            `json:"file"`
	SourceSHA256 string            `json:"source_sha256"`
	Source       string            `json:"source"`
	Overrides    map[string]string `json:"overrides,omitempty"` // flag -> value
	Driver       string            `json:"driver"`
	Settings     map[string]string `json:"settings,omitempty"` // the driver's, never secrets
	Target       string            `json:"target"`
	Model        string            `json:"model"`
	Users        int               `json:"users"`   // in the whole plan
	Segment      string            `json:"segment"` // k/n, with @weights when weighted
	// RunID names the run in every segment of it (a distributed run's
	// agents and hand-started segments share it) and in no other run: the
	// pub/sub family's subjects carry it.
	RunID        string      `json:"run_id,omitempty"`
	SegmentUsers int         `json:"segment_users"` // users this process ran
	Seed         int64       `json:"seed"`
	Speedup      float64     `json:"speedup"`
	IntervalS    float64     `json:"interval_s"`
	Iterations   int         `json:"iterations,omitempty"`       // closed.iterations: per user
	Total        int         `json:"total_iterations,omitempty"` // closed.total: shared by the users
	RatePerS     float64     `json:"rate_per_s,omitempty"`
	Engine       string      `json:"engine"`
	Threads      int         `json:"threads,omitempty"`
	Actions      []string    `json:"actions"`
	Events       []string    `json:"events,omitempty"` // the driver's events (deliver), the last of Actions: not in totals
	Groups       []GroupMeta `json:"groups,omitempty"` // a scenario with groups
	Phases       []PhaseMeta `json:"phases"`
	Runs         int         `json:"runs"`
	Trim         int         `json:"trim"`
	MaxDurationS float64     `json:"max_duration_s"`
	Host         Host        `json:"host"`
	Versions     Versions    `json:"versions"`
	Command      []string    `json:"command,omitempty"`
	StartedAt    time.Time   `json:"started_at"`
	// Interleave names a throng run of several configurations whose
	// repetitions alternated (A B A B ...): repetition i of each ran in
	// round i, so compare pairs them by round. Empty otherwise.
	Interleave string `json:"interleave,omitempty"`
}

// GroupMeta describes one group of users.
type GroupMeta struct {
	Name    string   `json:"name"`
	Users   int      `json:"users"`
	Model   string   `json:"model"`
	Actions []string `json:"actions,omitempty"` // none: a passive group
}

// PhaseMeta is a planned phase; EndS is -1 when the phase lasts until the
// users are done.
type PhaseMeta struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// Host describes the load-generator machine.
type Host struct {
	Hostname    string `json:"hostname"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Kernel      string `json:"kernel,omitempty"`
	CPUModel    string `json:"cpu_model,omitempty"`
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	GoMaxProcs  int    `json:"gomaxprocs"`
}

// Versions of the software that produced the run.
type Versions struct {
	Throng string `json:"throng"`
	// Commit is the VCS revision throng was built from ("+dirty" when the
	// work tree had changes), Date the commit's time; empty when the build
	// did not record them (go run, or a build outside a repository).
	Commit string `json:"commit,omitempty"`
	Date   string `json:"date,omitempty"`
	Go     string `json:"go"`
}

// Build is the throng version with its commit when known, as reports
// print it: "v1.2.3" or "dev (commit 0123456789ab)".
func (v Versions) Build() string {
	if v.Commit == "" {
		return v.Throng
	}
	return v.Throng + " (commit " + v.Commit + ")"
}

// Repetition is one run of the scenario.
type Repetition struct {
	Index     int        `json:"index"`
	StartedAt time.Time  `json:"started_at"`
	ElapsedS  float64    `json:"elapsed_s"`
	DrainS    float64    `json:"drain_s,omitempty"` // time spent waiting for events in flight after the load
	Partial   bool       `json:"partial"`
	Reason    string     `json:"reason,omitempty"`
	Aborted   uint64     `json:"aborted,omitempty"` // actions cut off by a stop, not counted
	Intervals []Interval `json:"intervals"`
	Summaries []Summary  `json:"summaries"` // one per phase, then "all"
	Taints    []Taint    `json:"taints,omitempty"`
	// Preparation is the data set written before the repetition, for the
	// drivers that report it (mail).
	Preparation *Preparation `json:"preparation,omitempty"`
	// Validity says whether the figures can be trusted (see Validity);
	// absent in results written before it, then computed when read.
	Validity *Validity `json:"validity,omitempty"`
}

// Preparation is the data set a driver wrote before a repetition.
type Preparation struct {
	Users    int     `json:"users"`
	Items    int64   `json:"items"`
	Bytes    int64   `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
	MBps     float64 `json:"mb_per_s"` // 10^6 bytes per second
	Method   string  `json:"method,omitempty"`
	// Checked items of a data set kept from an earlier run (files' reuse);
	// Repaired of them written again, missing or damaged, the first ones
	// named with why in RepairedFiles.
	Checked       int64    `json:"checked,omitempty"`
	Repaired      int64    `json:"repaired,omitempty"`
	RepairedFiles []string `json:"repaired_files,omitempty"`
}

// Interval is what happened in one recording interval. Intervals are cut at
// phase boundaries, so each one spans exactly one phase (Phase): one of the
// plan's, the ramp-down of a count-bound run, the drain, or the tail after
// a timed plan's end.
type Interval struct {
	Index       int     `json:"index"`
	StartS      float64 `json:"start_s"` // offset from the repetition's start
	DurationS   float64 `json:"duration_s"`
	Phase       string  `json:"phase"`
	ActiveUsers int     `json:"active_users"` // at the end of the interval
	UsersMean   float64 `json:"users_mean"`   // time average over the interval
	UsersMax    int     `json:"users_max"`    // peak during the interval
	Client      Client  `json:"client"`
	// Actions holds what finished in the interval and was scheduled in its
	// phase (events: caused in it), in the order of Meta.Actions; Carried
	// what finished in it and was scheduled in other phases, by phase.
	// Every action counts in the phase of its scheduled start, wherever it
	// finished: a phase's summary is of the work it started.
	Actions []ActionInterval `json:"actions"`
	Carried []PhaseActions   `json:"carried,omitempty"`
	// Counters are the counter sources read at the interval's end: rates
	// per second of counters, values of gauges (see the sampler package).
	Counters []sampler.SourceValues `json:"counters,omitempty"`
}

// Client is the load generator's own state in an interval: the figures of
// the client-bound guard.
type Client struct {
	CPUCores    float64   `json:"cpu_cores"`              // process CPU-seconds per second
	Capacity    float64   `json:"capacity_cores"`         // cores the engine can use
	ProcsMin    int       `json:"procs_min,omitempty"`    // fewest Go processors (GOMAXPROCS) in the interval, when governed
	ThreadBusy  []float64 `json:"thread_busy,omitempty"`  // event-loop threads, fraction of one core
	MachineBusy float64   `json:"machine_busy"`           // whole machine, 0..1 of all cores
	CPUWait     float64   `json:"cpu_wait"`               // share of its runnable time the generator waited for a CPU
	LagP99Ms    float64   `json:"lag_p99_ms"`             // scheduling lag of the generator
	LagMaxMs    float64   `json:"lag_max_ms"`             //
	RSSBytes    uint64    `json:"rss_bytes,omitempty"`    //
	Goroutines  int       `json:"goroutines,omitempty"`   //
	Connections int       `json:"connections,omitempty"`  // open connections at the end of the interval
	Bound       bool      `json:"client_bound,omitempty"` // the generator was the bottleneck
	BoundWhy    string    `json:"client_bound_why,omitempty"`
}

// ActionInterval is one action's figures in one interval.
type ActionInterval struct {
	Count    uint64            `json:"count"`
	Dropped  uint64            `json:"dropped,omitempty"`
	BytesIn  uint64            `json:"bytes_in,omitempty"`
	BytesOut uint64            `json:"bytes_out,omitempty"`
	Errors   map[string]uint64 `json:"errors,omitempty"`   // by class name
	Messages map[string]string `json:"messages,omitempty"` // a sample message per class
	Latency  metrics.Hist      `json:"latency_us"`         // from the scheduled start
	Service  metrics.Hist      `json:"service_us"`         // from the actual start
}

// PhaseActions is what actions of one phase did in an interval of another
// (scheduled, or caused, in Phase; finished in the interval), in the order
// of Meta.Actions.
type PhaseActions struct {
	Phase   string           `json:"phase"`
	Actions []ActionInterval `json:"actions"`
}

// Finished returns what finished in the interval, whatever the phase it
// counts in: Actions and Carried added, action by action (a new slice when
// there is anything carried). Time series read it; summaries do not.
func (iv *Interval) Finished() []ActionInterval {
	if len(iv.Carried) == 0 {
		return iv.Actions
	}
	snaps := make([]metrics.ActionSnapshot, len(iv.Actions))
	for i := range iv.Actions {
		snaps[i] = iv.Actions[i].Snapshot()
	}
	for _, c := range iv.Carried {
		for i := range c.Actions {
			if i < len(snaps) {
				s := c.Actions[i].Snapshot()
				snaps[i].Merge(&s)
			}
		}
	}
	out := make([]ActionInterval, len(snaps))
	for i := range snaps {
		out[i] = FromSnapshot(&snaps[i])
	}
	return out
}

// In returns what finished in the interval and counts in phase: Actions
// when it is the interval's phase, else what it carries of phase (nil when
// nothing). All returns Finished.
func (iv *Interval) In(phase string) []ActionInterval {
	switch {
	case phase == All:
		return iv.Finished()
	case phase == iv.Phase:
		return iv.Actions
	}
	for _, c := range iv.Carried {
		if c.Phase == phase {
			return c.Actions
		}
	}
	return nil
}

// Taint marks a repetition whose figures need care, with the reason in words.
type Taint struct {
	Kind      string `json:"kind"` // client_bound, machine_saturated, dropped_arrivals, errors, partial
	Phase     string `json:"phase,omitempty"`
	Intervals int    `json:"intervals,omitempty"`
	Message   string `json:"message"`
}

// Phase names used beside the plan's: "all" is the whole repetition.
const All = "all"

// EmbeddedTarget reports whether the target ran inside the throng process
// (target: embedded): its cost is inside the generator's.
func (m Meta) EmbeddedTarget() bool { return strings.HasPrefix(m.Target, "embedded ") }

// CountBound reports whether the run was bounded by a count of actions
// (per user or shared) rather than by its phases.
func (m Meta) CountBound() bool { return m.Iterations > 0 || m.Total > 0 }

// CountText says how the run was counted: "N iterations per user",
// "N iterations shared by the users", or "" for a run bounded by time.
func (m Meta) CountText() string {
	what := "iterations"
	if m.Journeys() {
		what = "journeys"
	}
	switch {
	case m.Iterations > 0:
		return fmt.Sprintf("%s %s per user", textfmt.Num(float64(m.Iterations)), what)
	case m.Total > 0:
		return fmt.Sprintf("%s %s shared by the users", textfmt.Num(float64(m.Total)), what)
	}
	return ""
}

// Journeys reports whether the run's users went through journeys (an
// iteration is a journey, with a row of its own, "journey:NAME").
func (m Meta) Journeys() bool {
	for _, e := range m.Events {
		if strings.HasPrefix(e, scenario.JourneyPrefix) {
			return true
		}
	}
	return false
}
