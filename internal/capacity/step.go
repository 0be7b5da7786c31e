package capacity

import (
	"time"

	"github.com/throng-io/throng/internal/result"
)

// Kind says why the search asked for a step.
type Kind string

// The kinds of step.
const (
	// WarmUp runs the first load once to warm the server (caches, pools,
	// connections); its figures are never used.
	WarmUp Kind = "warm-up"
	// Bracket grows the load geometrically until an SLO fails or the
	// generator becomes the bottleneck.
	Bracket Kind = "bracket"
	// Bisect halves the bracket between the highest load that clearly met
	// every SLO and the lowest that clearly failed one.
	Bisect Kind = "bisect"
	// Repeat runs a load again, longer, because its step was not clear-cut
	// (an SLO figure within its noise of the limit) or invalid.
	Repeat Kind = "repeat"
	// Flank runs a load just below or just above one whose SLO figure
	// stayed within its noise of the limit, to find clear-cut ends near it.
	Flank Kind = "flank"
)

// Request is one step the search asks the runner for: a load in the
// dimension's unit, run so that its measured (steady) part lasts Duration.
type Request struct {
	Kind     Kind
	Load     float64
	Duration time.Duration
	// Why says in words why this step, for the live line and the record
	// of the search's decisions.
	Why string
}

// Step is the record of one step: what was asked and what was measured.
// A runner fills it from the step's run (FromRun does it from a
// result.Run); the search reads nothing else.
type Step struct {
	Request
	// Elapsed is the wall time the step took, its ramp and any pause
	// included: the time budget counts it.
	Elapsed time.Duration
	// Before is the wall time between the end of the step before (the
	// search's start, for the first) and this step's start: the runner's
	// wait for the server to settle, the data set's preparation. The time
	// budget counts it too, so that it bounds the search's whole wall
	// time.
	Before time.Duration
	// Invalid lists why the step's figures cannot be trusted; empty when
	// the step is valid. The search never reports a figure from an invalid
	// step.
	Invalid []Invalid
	// SLOs has one figure per Config.SLOs, in order.
	SLOs []Figure
	// Throughput is the successful actions per second; Offered the rate
	// asked for (open arrivals), 0 when the load is not a rate.
	Throughput float64
	Offered    float64
	// Concurrency is the mean number of actions in flight (throughput ×
	// mean latency, Little's law): the N of the scalability fit when the
	// load is a rate.
	Concurrency float64
	// Users is the mean number of users logged on.
	Users float64
	// Latency summarizes the users' actions (from the scheduled start).
	Latency result.Latency
	// Count, Errors and Dropped count the actions finished, failed and the
	// arrivals dropped; ErrorsByClass splits the errors by class name.
	Count, Errors, Dropped uint64
	ErrorsByClass          map[string]uint64
	Counters               Counters
}

// Valid reports whether the step's figures can be used.
func (s *Step) Valid() bool { return len(s.Invalid) == 0 }

// has reports whether the step is invalid for a reason of kind k.
func (s *Step) has(k InvalidKind) bool {
	for _, iv := range s.Invalid {
		if iv.Kind == k {
			return true
		}
	}
	return false
}

// InvalidKind is a reason not to trust a step.
type InvalidKind string

// The reasons. The search treats each its own way (see Decide).
const (
	// GeneratorBound: the load generator was the bottleneck (its CPU, its
	// event loops), or lagged its schedule of arrivals (open model): the
	// figures measure the client.
	GeneratorBound InvalidKind = "generator"
	// Unsteady: an SLO figure drifted over the step by more than its
	// noise, in a way that could change its verdict (a drift far from the
	// limit does not make a step invalid). Rising says it drifted the way
	// that fails: a queue that grows at a load the server does not sustain.
	Unsteady InvalidKind = "unsteady"
	// FewSamples: too few samples for an SLO's percentile in the
	// population it judges (one action's, an event's, or the users'
	// actions together: a p99 needs 1,000); a longer step has more.
	FewSamples InvalidKind = "few-samples"
	// Partial: the step did not run as planned (stopped, an agent lost,
	// the target refused).
	Partial InvalidKind = "partial"
	// Missing: an SLO's figure does not exist in the step (no action of
	// its population finished, a counter source it reads did not answer):
	// nothing to judge, which is not a failure of the SLO.
	Missing InvalidKind = "missing"
)

// Invalid is one reason, in words.
type Invalid struct {
	Kind   InvalidKind `json:"kind"`
	Rising bool        `json:"rising,omitempty"` // Unsteady: the drift worsens the SLO
	Why    string      `json:"why"`
}

// Figure is one SLO's figure in a step, in the threshold's unit.
type Figure struct {
	Value float64 // NaN when missing (no action finished, no counters)
	// HalfWidth is the half-width of a 95 % confidence interval of Value
	// (sectioning: the spread of the figure over parts of the step); 0 for
	// an exact figure (a count), NaN when unknown.
	HalfWidth float64
}

// Counters are the resources of the server (and of the generator) in a
// step, each a share of what there is, 0..1, or NaN when not measured.
type Counters struct {
	ServerCPU   float64 // the server's CPU use over its ceiling (ServerCeiling)
	ServerCores float64 // cores the server used (for per-unit costs)
	// ServerCeiling is the most cores the server can use, and
	// ServerCeilingBy what sets it (see Ceiling).
	ServerCeiling   float64
	ServerCeilingBy string
	// ServerThrottled is the share of its CPU quota's periods in which the
	// quota stopped the server (NaN: no quota).
	ServerThrottled float64
	DiskBusy        float64 // the busiest disk's share of time busy
	Memory          float64 // the server machine's memory in use
	Network         float64 // network traffic over the link's capacity (NaN unless the link speed is known)
	// MajorFaultsPerS are page faults that read the disk: memory pressure
	// shows here before Memory reaches 1.
	MajorFaultsPerS float64
	GeneratorCPU    float64 // the generator's CPU use over what it may use
}

// NaNCounters returns Counters with nothing measured.
func NaNCounters() Counters {
	n := nan()
	return Counters{ServerCPU: n, ServerCores: n, ServerCeiling: n, ServerThrottled: n, DiskBusy: n, Memory: n, Network: n, MajorFaultsPerS: n, GeneratorCPU: n}
}
