package agent

import (
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
)

// Message kinds.
const (
	// controller → agent
	KindPlan  = "plan"  // run this segment of this scenario; answer ready or error
	KindStart = "start" // start at StartAt (the barrier)
	KindStop  = "stop"  // stop now and send what was recorded (before the start: withdraw the plan)
	// KindPrepare asks the data set of this segment of this scenario
	// prepared once, for the runs of the session that keep it
	// (PlanRequest.KeepPopulation); answer prepared or error.
	KindPrepare = "prepare"
	// agent → controller
	KindReady         = "ready"          // the plan compiled; waiting for start
	KindStarted       = "started"        // the run began (StartedAt: when exactly)
	KindMeta          = "meta"           // the segment's metadata
	KindRepetition    = "repetition"     // a repetition began
	KindInterval      = "interval"       // one interval, as soon as it is cut
	KindRepetitionEnd = "repetition_end" // a repetition ended
	KindEnd           = "end"            // the run ended (Partial, Reason)
	KindError         = "error"          // the plan cannot run (Error says why)
	KindPrepared      = "prepared"       // the data set asked is prepared (Prepared)
	// both ways
	KindPing = "ping" // I am alive
)

// PlanRequest is what a controller asks an agent to run: the scenario as
// written (never with secrets: those are read from the agent's own
// environment), the settings that change it, by key path ("users",
// "open.rate", "vars.size": never a command's flags), and the segment.
type PlanRequest struct {
	File     string           `json:"file"`
	Source   string           `json:"source"`
	Settings []runner.Setting `json:"settings"` // in order (a list's items repeat the key)
	Segment  string           `json:"segment"`  // "k/n"
	Weights  string           `json:"weights,omitempty"`
	Label    string           `json:"label,omitempty"`
	// RunID names the run in every agent (result.Meta.RunID), drawn by the
	// controller; an agent given none derives it as segments started by
	// hand do.
	RunID string `json:"run_id,omitempty"`
	// KeepPopulation: the segment's data set was prepared earlier in the
	// session (KindPrepare, for as many users or more): the run checks it
	// instead of writing it (runner.Config.KeepPopulation).
	KeepPopulation bool `json:"keep_population,omitempty"`
}

// PreparedInfo is what an agent wrote preparing a segment's data set.
type PreparedInfo struct {
	Users    int     `json:"users"`
	Items    int64   `json:"items"`
	Bytes    int64   `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
	Method   string  `json:"method,omitempty"`
}

// ReadyInfo is an agent's answer to a plan it can run.
type ReadyInfo struct {
	Host         result.Host `json:"host"`
	Engine       string      `json:"engine"`
	Threads      int         `json:"threads"`
	SegmentUsers int         `json:"segment_users"`
}

// Message is one frame's content.
type Message struct {
	Kind      string             `json:"kind"`
	Plan      *PlanRequest       `json:"plan,omitempty"`
	StartAt   time.Time          `json:"start_at,omitzero"`
	Ready     *ReadyInfo         `json:"ready,omitempty"`
	StartedAt time.Time          `json:"started_at,omitzero"`
	Meta      *result.Meta       `json:"meta,omitempty"`
	Rep       int                `json:"rep,omitempty"`
	Interval  *result.Interval   `json:"interval,omitempty"`
	RepEnd    *result.Repetition `json:"rep_end,omitempty"` // without its intervals
	Partial   bool               `json:"partial,omitempty"`
	Reason    string             `json:"reason,omitempty"`
	Error     string             `json:"error,omitempty"`
	// Population marks an error of a run whose data set, prepared earlier
	// in the session, was found gone or changed (runner.PopulationError).
	Population bool          `json:"population,omitempty"`
	Prepared   *PreparedInfo `json:"prepared,omitempty"`
}
