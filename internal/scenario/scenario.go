// Package scenario is the user's scenario file as data: strict YAML decoding
// with file:line:col for every problem, units (90s, 75KB, 12/8h), defaults,
// command-line overrides, validation, and the embedded presets.
//
// A scenario says who the users are (how many, closed or open model), what
// they do (actions), when (phases: ramp-up, steady state, ramp-down), against
// what (target), and how the run is recorded (interval, runs, seed). The
// protocol family's own settings live in one block named after it ("web:"),
// decoded by that driver with the same rules.
package scenario

import (
	"time"
)

// Models of load.
const (
	// Closed: each user does its actions back to back, with optional think
	// time, until a count or the end of the phases. Load follows the server.
	Closed = "closed"
	// Open: actions arrive on a schedule (an aggregate rate, or per-user
	// rates), whatever the server does; a late arrival is dropped and counted.
	Open = "open"
)

// Think-time and arrival distributions.
const (
	Fixed       = "fixed"
	Exponential = "exponential"
	Poisson     = "poisson"
	Uniform     = "uniform"
)

// Engine kinds.
const (
	EngineAuto       = "auto"
	EngineIOUring    = "io_uring"
	EngineEpoll      = "epoll"
	EngineGoroutines = "goroutines"
)

// Scenario is one decoded scenario file. Its zero value is not useful; use
// Parse, Load or LoadPreset, which apply the defaults listed on each field.
type Scenario struct {
	Name        string   `yaml:"name"`         // default: the file name without extension
	Description string   `yaml:"description"`  // free text, shown by `presets show`
	Label       string   `yaml:"label"`        // names this configuration in reports and comparisons
	Target      string   `yaml:"target"`       // "embedded" (default) or a URL such as http://127.0.0.1:8080
	Seed        int64    `yaml:"seed"`         // one seed for all randomness; default 1
	Speedup     float64  `yaml:"speedup"`      // multiplies every rate and divides think times; default 1
	Interval    Duration `yaml:"interval"`     // recording interval; default 1s
	MaxDuration Duration `yaml:"max_duration"` // hard bound on one run; default derived from the phases
	Runs        int      `yaml:"runs"`         // repetitions; default 1
	Trim        int      `yaml:"trim"`         // repetitions dropped at each end before the mean; default 0
	// Vars are the scenario's variables with their defaults: any value
	// written "$name" takes the variable's value; --set name=value changes it.
	Vars map[string]string `yaml:"vars"`

	Users    int         `yaml:"users"`  // simulated users (sessions); in the open aggregate model, the most at once
	Model    string      `yaml:"model"`  // "closed" (default) or "open"
	Closed   ClosedModel `yaml:"closed"` // closed-model settings
	Open     OpenModel   `yaml:"open"`   // open-model settings
	Phases   Phases      `yaml:"phases"`
	Engine   Engine      `yaml:"engine"`
	Counters Counters    `yaml:"counters"` // counters read beside the load
	// Thresholds are pass/fail limits checked at the end, like "p95 < 500ms"
	// or "ramp-up: error_rate < 1%" (see docs/scenario.md); any failure
	// gives exit code 1.
	Thresholds []string `yaml:"thresholds"`

	Actions []Action `yaml:"actions"`
	// Journeys are ordered flows of steps, each iteration one journey
	// picked by weight (see Journey); not with actions. Their steps are
	// gathered into Actions once decoded.
	Journeys []Journey `yaml:"journeys"`
	// Groups are kinds of users with their own users, model and actions
	// (see Group); when given, top-level users, model and actions are not.
	Groups []Group `yaml:"groups"`

	// Driver is the protocol family of the workload, the name of the one
	// driver block present ("web"), and DriverConfig that block undecoded.
	Driver       string `yaml:"-"`
	DriverConfig Node   `yaml:"-"`

	// File is where the scenario came from: a path, or "preset NAME".
	File string `yaml:"-"`
	// Source is the text the scenario was decoded from.
	Source []byte `yaml:"-"`

	extra  Node              // top-level keys other than the known ones (driver blocks)
	pos    map[string]Pos    // key path -> position in the file
	origin map[string]string // key path -> where a value given from outside came from (Given.From)
	// localSchemes are the URL schemes whose targets are local paths
	// without a host (AllowLocalTargets).
	localSchemes []string
	failed       map[string]bool // key paths whose value the file gave but could not be decoded
}

// ClosedModel holds the closed-model settings.
type ClosedModel struct {
	// Iterations is the number of actions each user does before it stops;
	// 0 means "until the phases end".
	Iterations int `yaml:"iterations"`
	// Total is the number of actions all users do together: a user that is
	// free takes the next one until Total have started (k6's
	// shared-iterations, smtp-source -m). 0: not shared. Not with
	// Iterations.
	Total int `yaml:"total"`
	// Think is the pause between two actions of a user (default 0).
	Think Duration `yaml:"think"`
	// ThinkDistribution is "fixed" (default) or "exponential" with mean Think.
	ThinkDistribution string `yaml:"think_distribution"`
	// Pacing, when set, starts each of a user's iterations Pacing after
	// the previous one was due (Gatling's pace, Locust's constant_pacing),
	// and latency is timed from that paced schedule: a user that falls
	// behind does the iterations it owes back to back, each timed from its
	// slot. Not with Think.
	Pacing Duration `yaml:"pacing"`
}

// OpenModel holds the open-model settings.
type OpenModel struct {
	// Rate is the aggregate arrival rate in the steady state, shared by all
	// users; an arrival picks an action by weight. Leave it out to give each
	// action a per-user rate instead (actions[].rate).
	Rate Rate `yaml:"rate"`
	// Arrivals is "poisson" (default: exponential gaps) or "uniform" (even gaps).
	Arrivals string `yaml:"arrivals"`
	// MaxDelay bounds how late an arrival may start (all sessions busy, or
	// the user still busy); past it the arrival is dropped and counted.
	// Default 1s.
	MaxDelay Duration `yaml:"max_delay"`
}

// Phases is the timeline of a run: ramp-up, steady state, ramp-down.
type Phases struct {
	RampUp   RampUp   `yaml:"ramp_up"`
	Steady   Duration `yaml:"steady"`    // steady-state length; 0 in a closed run bounded by iterations
	RampDown Duration `yaml:"ramp_down"` // users leave (or the rate falls) evenly over this
	// Drain bounds the wait, after the load, for events still in flight
	// (messages published but not yet delivered) for drivers that have
	// them; default 30s.
	Drain Duration `yaml:"drain"`
}

// RampUp says how users log on (closed and per-user open models) or how the
// aggregate rate rises (open model). Either Duration (users join evenly; the
// rate rises linearly) with optional Steps (users join, or the rate rises, in
// that many equal stairs), or Every with optional Group and Pause (staged: one
// new user every Every, in groups of Group users, with Pause between groups).
type RampUp struct {
	Duration Duration `yaml:"duration"`
	Steps    int      `yaml:"steps"`
	Every    Duration `yaml:"every"`
	Group    int      `yaml:"group"`
	Pause    Duration `yaml:"pause"`
}

// Engine chooses how users are executed.
type Engine struct {
	// Kind is "auto" (default), "io_uring", "epoll" or "goroutines".
	// io_uring and epoll run many connections per locked OS thread; they serve
	// drivers whose actions are plain request/response exchanges over TCP.
	Kind string `yaml:"kind"`
	// Threads is the number of event-loop threads; 0 chooses one per core,
	// at most one per user.
	Threads int `yaml:"threads"`
}

// Counters says which counters are read beside the load, at every interval.
// The generator's own process is always read.
type Counters struct {
	// System reads the local machine from /proc and /sys (default true).
	System bool `yaml:"system"`
	// Processes are server processes, each with its children: a name
	// ("nginx", matched against the command name), a PID ("1234"), or
	// "pidfile:PATH".
	Processes []string `yaml:"processes"`
	// NodeExporter are URLs of Prometheus node_exporter pages
	// (http://host:9100/metrics): a machine measured from afar.
	NodeExporter []string `yaml:"node_exporter"`
	// Timeout bounds one reading of a source (default: half the interval,
	// at most 2s); a source that takes longer is down for that interval.
	Timeout Duration `yaml:"timeout"`
}

// Action is one thing a user does. Name, Weight and Rate are common to every
// protocol; the other keys belong to the driver and are kept in Params.
type Action struct {
	Name   string  `yaml:"name"`   // unique; default "action N"
	Weight float64 `yaml:"weight"` // share of picks when a user or an arrival chooses an action; default 1
	Rate   Rate    `yaml:"rate"`   // open model with per-user rates: how often each user does it
	Params Node    `yaml:",rest"`  // the driver's keys (method, path, ...)
	// Group is the name of the group whose users do this action, in a
	// scenario with groups (else "").
	Group string `yaml:"-"`
	// Journey is the name of the journey this action is a step of (else
	// ""); Think, Repeat, While and MaxRounds are the step's (see Step).
	Journey   string   `yaml:"-"`
	Think     Duration `yaml:"-"`
	Repeat    int      `yaml:"-"`
	While     string   `yaml:"-"`
	MaxRounds int      `yaml:"-"`
	// Node is the action's whole mapping in the file, for positions of
	// keys that are not the driver's (a step's while).
	Node Node   `yaml:",node"`
	path string // where the action is in the file: "actions[2]", "groups[1].actions[0]"
}

// Default values.
const (
	DefaultSeed     = 1
	DefaultInterval = Duration(time.Second)
	DefaultMaxDelay = Duration(time.Second)
	// DefaultCountBound is the max_duration of a closed run bounded only by
	// its iterations.
	DefaultCountBound = Duration(30 * time.Minute)
)

func newScenario() *Scenario {
	return &Scenario{
		Target:   "embedded",
		Seed:     DefaultSeed,
		Speedup:  1,
		Interval: DefaultInterval,
		Runs:     1,
		Model:    Closed,
		Closed:   ClosedModel{ThinkDistribution: Fixed},
		Open:     OpenModel{Arrivals: Poisson, MaxDelay: DefaultMaxDelay},
		Engine:   Engine{Kind: EngineAuto},
		Counters: Counters{System: true},
		pos:      map[string]Pos{},
		origin:   map[string]string{},
	}
}

// PerUserRates reports whether the scenario is an open model in which each
// action has its own per-user rate (rather than an aggregate arrival rate).
func (s *Scenario) PerUserRates() bool {
	return s.Model == Open && s.Open.Rate.PerSecond == 0
}

// RampUpLength is the planned length of the ramp-up phase: until the last
// user of every group has logged on.
func (s *Scenario) RampUpLength() time.Duration {
	var longest time.Duration
	for _, v := range s.Views() {
		longest = max(longest, v.Start.D()+RampLength(v.RampUp, v.Users))
	}
	return longest
}

// RampLength is how long a ramp takes to log n users on: its duration, or
// for a staged ramp one step past the last user's logon.
func RampLength(r RampUp, n int) time.Duration {
	if r.Duration > 0 {
		return r.Duration.D()
	}
	if r.Every <= 0 || n <= 0 {
		return 0
	}
	group := r.Group
	if group <= 0 || group > n {
		group = n
	}
	groups := (n + group - 1) / group
	// The first user of each group starts at the group's start; the last user
	// of the last group starts (n-1) steps plus the pauses after the start.
	return time.Duration(n-1)*r.Every.D() + time.Duration(groups-1)*r.Pause.D() + r.Every.D()
}

// RampOffset is when the j-th of n users logs on in a ramp (0 for the first).
func RampOffset(r RampUp, j, n int) time.Duration {
	switch {
	case r.Every > 0:
		group := r.Group
		if group <= 0 || group > n {
			group = n
		}
		g, k := j/group, j%group
		return time.Duration(g)*(time.Duration(group)*r.Every.D()+r.Pause.D()) + time.Duration(k)*r.Every.D()
	case r.Duration > 0 && r.Steps > 0:
		// Users join in Steps equal groups at even times.
		step := ScaleDuration(time.Duration(j), int64(r.Steps), int64(n)) // j*steps/n, whole
		return ScaleDuration(r.Duration.D(), int64(step), int64(r.Steps))
	case r.Duration > 0:
		return ScaleDuration(r.Duration.D(), int64(j), int64(n))
	}
	return 0
}

// Counted reports whether the closed model counts its actions, per user
// (closed.iterations) or shared (closed.total).
func (c ClosedModel) Counted() bool { return c.Iterations > 0 || c.Total > 0 }

// PlannedLength is the length of ramp-up + steady + ramp-down, or 0 when the
// run is bounded only by a count of iterations.
func (s *Scenario) PlannedLength() time.Duration {
	if s.Phases.Steady == 0 && s.Model == Closed && s.Closed.Counted() {
		return 0
	}
	return s.RampUpLength() + s.Phases.Steady.D() + s.Phases.RampDown.D()
}

// EffectiveMaxDuration is max_duration, or when it is not set a bound derived
// from the phases: the planned length plus a quarter and one minute, or
// DefaultCountBound for a run bounded by iterations.
func (s *Scenario) EffectiveMaxDuration() time.Duration {
	if s.MaxDuration > 0 {
		return s.MaxDuration.D()
	}
	if p := s.PlannedLength(); p > 0 {
		return p + p/4 + time.Minute
	}
	return DefaultCountBound.D()
}
