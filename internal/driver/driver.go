// Package driver is the contract between the engine and a protocol family.
// A family (web, mail, pubsub, files) decodes its scenario block into a
// Config, compiles each action once before the run, prepares its data set,
// and opens one Session per simulated user. The engine times every action
// itself; a driver only does the work and says how it went (an Outcome and
// an error carrying its Class).
//
// Optional abilities are separate interfaces found by type assertion: of a
// Config (Wire: request/response over plain TCP, driven by the engine's
// event loops; Preflighter, CounterSources, Events, Describer,
// PopulationKeeper, ...), of a
// WireParser (WireErrorer) and of a Target (Provisioner). A Family (family.go)
// is how the program wires a family in: one package, one line in
// cli/builtin.go.
package driver

import (
	"context"
	"time"

	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// Config is a protocol family's settings for one run, decoded strictly from
// the scenario's block. Its methods are called from one goroutine, before the
// run, except Open, which the engine calls from many users at once.
type Config interface {
	// Validate checks the settings: one error per problem, positioned in the
	// scenario file.
	Validate() []error
	// Compile turns one scenario action into the driver's own form, once,
	// before the run, so that nothing is parsed on the hot path.
	Compile(a scenario.Action) (Action, []error)
	// Prepare creates the data set the users need (mailboxes, files, ...),
	// fresh for each run. A family without a data set returns nil.
	Prepare(ctx context.Context, pop Population) error
	// Open logs on one simulated user. It is safe for concurrent use.
	Open(ctx context.Context, u User) (Session, error)
}

// Action is an action compiled by a driver; only that driver looks inside.
type Action any

// Population describes the users whose data Prepare creates, and the
// repetition it is for.
type Population struct {
	TotalUsers int   // users in the whole plan
	Users      []int // global IDs of the users this process runs
	Seed       uint64
	// Run names the run: the same in every segment of a distributed run,
	// different from any other run's, so that what a run must not share
	// with another (pub/sub subjects) carries it. "" outside a runner.
	Run string
	// Repetition is the repetition's index (from 0); this process runs
	// segment Segment of Segments (1 of 1 when alone).
	Repetition        int
	Segment, Segments int
}

// User is one simulated user as a driver sees it.
type User struct {
	ID    int    // global index, the same in every segment
	Users int    // users in the whole plan (user ID of Users)
	Group string // the user's group in a scenario with groups, else ""
	Seed  uint64 // seed of the user's own random stream
}

// Session is one logged-on user. It is used by one goroutine at a time.
type Session interface {
	// Do performs one action and reports its bytes; it does not time itself.
	// A failure is returned as an error whose Class says what kind it was
	// (see Errorf and Classify). A session repairs itself (reconnects) on the
	// next Do after a broken connection.
	Do(ctx context.Context, a Action) (Outcome, error)
	// Close logs the user off and releases the session's resources.
	Close() error
}

// Outcome is what one action moved.
type Outcome struct {
	BytesIn  int64 // bytes received
	BytesOut int64 // bytes sent
	// Untimed is the time Do spent, after the action itself was done, on
	// work that is not the action (files: reading an upload back to check
	// it, recorded as an event of its own). The engine ends the action's
	// latency and service time that much before Do returned; the user is
	// busy until Do returns all the same.
	Untimed time.Duration
}

// Journeys is an optional Config ability: the family runs journeys, ordered
// steps whose users keep state between steps (cookies, extracted values).
// Its sessions implement Conditions. Compile is then called once per step,
// in the file's order (journeys, then their steps), so the driver can check
// that a step only uses what an earlier step provides.
type Journeys interface {
	JourneySteps() bool
}

// Conditions is the Session side of Journeys.
type Conditions interface {
	// Begin tells the session that an iteration (a journey) begins, before
	// its first step (a data feed's row per iteration is taken here).
	Begin()
	// Holds says whether a step with a condition (a scenario step's while)
	// is to be done now. It is called before each time the step would be
	// done; false ends the step's loop. An error (the condition cannot be
	// evaluated) fails the user's iteration with the error's class.
	Holds(a Action) (bool, error)
}

// PlanChecker is an optional Config ability: checks, before the run, what
// depends on the size of the whole plan (a data feed shorter than the
// users need). users is the plan's, iterations each user's (0 when the
// run is bounded by time). Each error is bad input.
type PlanChecker interface {
	CheckPlan(users, iterations int) []error
}

// Describer is an optional Config ability: settings worth recording in the
// result's metadata (keep-alive, TLS, protocol version). Never secrets.
type Describer interface {
	Describe() map[string]string
}

// Preflighter is an optional Config ability: the target is checked before
// anything runs (its name resolves, it accepts a connection, it answers in
// the protocol). A failure stops the run before its load starts. Settings
// the server negotiates there (an SMB dialect) may show in Describe after.
type Preflighter interface {
	Preflight(ctx context.Context) error
}

// CounterSources is an optional Config ability: counter groups of the
// driver's own, read at every interval beside the server's (pub/sub: its
// backlog, deliveries and connections). They belong to this Config: each
// run that decodes the block reads its own.
type CounterSources interface {
	CounterSources() []sampler.Source
}

// LogonAtStart is an optional Config ability: in the per-user open model,
// a user logs on (Open) at its start time, during the ramp, rather than at
// its first action. Mail clients stay logged on all day, so a log-on storm
// is the ramp (the Domino study's log-on storm, docs/studies.md) and idle
// users hold their sessions.
type LogonAtStart interface {
	LogonAtStart() bool
}

// Wire is an optional Config ability: every action is one request and one
// response over one plain TCP connection, so the engine's event loops can
// run many users per OS thread without the driver's Session. Compiled
// actions then implement WireAction.
type Wire interface {
	// WireAddr returns the host:port to connect to, and false when this
	// configuration needs more than plain TCP (TLS, a proxy).
	WireAddr() (addr string, ok bool)
	// WireKeepAlive reports whether a connection carries more than one request.
	WireKeepAlive() bool
	// WireTimeout is the time allowed for one whole exchange.
	WireTimeout() time.Duration
	// NewWireParser returns a parser for the responses of one connection.
	NewWireParser() WireParser
}

// Events is an optional Config ability: the driver records events that
// are not the engine's actions — messages delivered to subscribers, mail
// arriving in a mailbox — as actions of their own, named by EventActions
// (they follow the scenario's actions in results). The engine calls Observe
// once before the run and Drain once after every user has stopped.
type Events interface {
	// EventActions names the driver's event actions, like "deliver".
	EventActions() []string
	// Observe gives the driver the sink its events go to. The sink is safe
	// for concurrent use and does not allocate on success.
	Observe(sink Sink)
	// Drain waits, within ctx's deadline, until what is in flight has
	// arrived (a broker's backlog is not loss), then records what never
	// arrived (class Lost). The engine labels this time "drain" and reports
	// its length. Drain ends the repetition, stopped early or not: the
	// driver releases there what it held for it (pub/sub its connections
	// and loops, mail its submission loop); the next repetition's Observe
	// or first action starts afresh.
	Drain(ctx context.Context) error
}

// ImmediateEvents is an optional ability of an Events driver whose events
// are all recorded before the action that causes them returns (files: an
// upload's read-back): nothing is ever in flight, so when it returns true
// the engine does not drain (no drain phase) and never calls Drain.
type ImmediateEvents interface {
	EventsImmediate() bool
}

// Sink records events as finished actions. event is the index of one of
// EventActions; a negative latency means the event has none (a message
// found lost at the drain): it is counted in its class only. in and out are
// the bytes the generator received and sent for the event (a delivered
// message's payload; a mail watcher's exchanges); they count in the run's
// network figures like an action's.
//
// cause is when the event's cause began: a delivered or lost message's
// publication or submission. The engine counts the event in the phase of
// its cause (a message sent in the steady state and lost is the steady
// state's loss, whenever it is found lost). The zero time means "now".
type Sink interface {
	Event(event int, cause time.Time, latency time.Duration, in, out int64, class Class, err error)
}

// Thresholder is an optional Config ability: limits the family judges
// every run by unless the scenario sets its own on the same metric, each
// written as a threshold ("all: corrupt == 0": the files family fails a
// run in which content read or read back was not what was written).
type Thresholder interface {
	DefaultThresholds() []string
}

// WireH2 is an optional Wire ability: the requests are HTTP/2 without TLS,
// with prior knowledge (h2c), several users sharing each connection, one
// stream each. Compiled actions then implement WireH2Action. The engine's
// event loops speak the framing; the driver gives the header blocks and
// judges the statuses.
type WireH2 interface {
	// WireH2 returns how many users share one connection (>= 1), and false
	// when the requests are HTTP/1.1.
	WireH2() (streams int, ok bool)
	// WireStatus returns the class of a response of status code status and
	// its sample error (nil when the class is OK), as the HTTP/1.1 parser
	// judges it, without allocating.
	WireStatus(status int) (Class, error)
}

// WireH2Action is a compiled action that is one HTTP/2 request without a
// body: one HEADERS frame ending the stream.
type WireH2Action interface {
	// WireH2Headers returns the request's header block, HPACK-encoded so
	// that the same bytes may be sent any number of times on any
	// connection: no field refers to or enters the dynamic table. nil when
	// the request cannot be sent so (it has a body, or the block exceeds
	// the smallest frame size, 16,384 bytes).
	WireH2Headers() []byte
}

// WireErrorer is an optional WireParser ability: the sample error of the
// completed response when its class is not OK, in the protocol's words
// ("HTTP status 503"), made without allocating. When it returns nil, or
// the parser lacks the ability, the engine uses its generic error of the
// class.
type WireErrorer interface {
	WireError() error
}

// WireAction is a compiled action that is one request sent as is.
type WireAction interface {
	// WireRequest returns the request's bytes. The engine never modifies
	// them and may hand them to the kernel for as long as the run lasts.
	WireRequest() []byte
}

// Idempotent is an optional ability of a compiled action: whether sending
// it twice has the effect of sending it once (RFC 9110 §9.2.2: GET, HEAD,
// OPTIONS, TRACE, PUT, DELETE). Only such an action is sent again when a
// reused keep-alive connection turns out closed before any byte of the
// answer came; an action without the ability is never sent twice.
type Idempotent interface {
	Idempotent() bool
}

// IsIdempotent reports whether action a may be sent again (see Idempotent).
func IsIdempotent(a Action) bool {
	i, ok := a.(Idempotent)
	return ok && i.Idempotent()
}

// WireParser reads the responses of one connection, one at a time,
// incrementally: bytes may arrive split anywhere. It never allocates on the
// hot path and never keeps a reference to the bytes it is fed.
type WireParser interface {
	// Begin prepares for the response to action a.
	Begin(a Action)
	// Feed consumes response bytes and returns how many it used and whether
	// the response is complete. Bytes past a complete response are not used.
	// A malformed response completes at once with class Protocol.
	Feed(p []byte) (n int, done bool)
	// EOF tells the parser the peer closed the connection. It returns true
	// when that completes the response (a body that ends at close).
	EOF() bool
	// Result is the class of the completed response (OK, Status4xx,
	// Status5xx or Protocol) and whether the connection may be reused.
	Result() (c Class, keepAlive bool)
}

// Preparation is what one Prepare wrote: the data set's size and the time
// it took, so a result keeps the population rate (the Exchange study's
// scale is 8,000 mailboxes of 25 MB: how fast they are written matters).
type Preparation struct {
	Users   int           // users whose data was written
	Items   int64         // messages, files, ...
	Bytes   int64         // their bytes
	Elapsed time.Duration // the writing, end to end
	Method  string        // how: "IMAP APPEND over 8 connections", "maildir files", ...
	// Checked is the items of a data set kept from an earlier run and
	// checked instead of written (files' reuse); Repaired of them were
	// written again because they were missing or damaged, the first
	// MaxRepairedNames named in RepairedNames with why ("f00000003.bin:
	// missing"). Items counts the repaired with the others written.
	Checked, Repaired int64
	RepairedNames     []string
}

// MaxRepairedNames bounds Preparation.RepairedNames: a data set of 50,000
// files all missing is said in a count, not a list.
const MaxRepairedNames = 20

// PopulationKeeper is an optional Config ability of a family whose data
// set is costly to write (mail, files): a capacity search prepares it once,
// for its largest load (Prepare, on a Config of that load), and before each
// step readies the step's Config on it with KeepPopulation instead of
// writing it again.
type PopulationKeeper interface {
	// KeepPopulation readies the Config to run on a data set an earlier
	// Prepare of the same scenario wrote for pop's users or more: it sets
	// what Prepare sets in memory, and checks, cheaply (no data set
	// written again), that the data set is still there for pop's users,
	// putting back only what a run may change by design (a file a delete
	// action removed). An error says what is gone or different: the step
	// cannot run. LastPreparation then reports the check.
	KeepPopulation(ctx context.Context, pop Population) error
}

// PreparationReporter is implemented by a Config whose Prepare writes a
// data set: the runner keeps the last Preparation in the repetition's
// result.
type PreparationReporter interface {
	LastPreparation() Preparation
}
