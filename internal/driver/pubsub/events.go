package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/textfmt"
)

// The driver's event actions, in the order of EventActions.
const (
	evDeliver      = iota // a message delivered (latency: from its send time); lost while connected ones at the drain
	evConnect             // a connection set up (latency: dial to confirmed subscription) or lost
	evDuplicate           // a message delivered again
	evOutOfOrder          // a message delivered after a later one of its stream (also a delivery)
	evMissed              // a delivery owed while its subscriber was disconnected by a break (class lost, at the drain)
	evOutage              // a window during which connections were broken (latency: its length)
	evSlowConsumer        // a subscriber the server cut off for not reading fast enough
)

var eventNames = []string{"deliver", "connect", "duplicate", "out_of_order", "missed", "outage", "slow_consumer"}

// EventActions implements driver.Events.
func (c *Config) EventActions() []string { return eventNames }

// run is one repetition, from Observe to the end of Drain: its streams,
// its connections, its readers and its counts.
type run struct {
	c     *Config
	sink  driver.Sink
	reg   *registry
	stats stats
	rss0  int64 // the process's resident memory when the run began
	start time.Time
	// The run's names: subjects are pattern with {run} replaced by id,
	// {n} by the subject's number; tag is the messages' run tag. ctl is
	// the control connection of a distributed run (nil in one process).
	id      string
	pattern string
	tag     uint32
	ctl     *control

	mu       sync.Mutex
	subs     []*subscription // every subscription, accounted at the drain
	sessions []*session      // sessions with their own connection, closed at the drain
	loops    []*loop
	next     int // the loop the next subscriber goes to
	readers  sync.WaitGroup
	pending  sync.WaitGroup // lost connections being explained and reconnected
	done     chan struct{}  // closed by close: reconnections stop
	ctx      context.Context
	cancel   context.CancelFunc
	closed   bool
	broken   int      // connections broken and not yet restored
	outages  []outage // windows during which some were broken
	final    tally
	drained  bool
}

// stats are the run's running counts, read by the counter source.
type stats struct {
	delivered   atomic.Uint64 // accounted deliveries (first arrivals of expected messages)
	early       atomic.Uint64
	dup         atomic.Uint64
	late        atomic.Uint64
	corrupt     atomic.Uint64
	lost        atomic.Uint64 // known at the drain: lost while connected and missed while disconnected
	missed      atomic.Uint64 // of which missed while disconnected
	connected   atomic.Int64  // open subscriber connections
	disconnects atomic.Uint64 // connections the broker or the network broke
	slow        atomic.Uint64 // of which the server cut off as slow consumers
	dead        atomic.Uint64 // of which were found dead by the keep-alive
}

func newRun(c *Config, sink driver.Sink) *run {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	sp := c.space
	c.mu.Unlock()
	r := &run{c: c, sink: sink, reg: newRegistry(), rss0: selfRSS(), start: time.Now(), done: make(chan struct{}), ctx: ctx, cancel: cancel,
		id: sp.id, pattern: c.pattern(), tag: runTag(sp.id, sp.rep)}
	if sp.n > 1 && sink != nil {
		r.ctl = newControl(r, sp.k, sp.n)
	}
	return r
}

// subjectName is subject number n.
func (r *run) subjectName(n int) string {
	return strings.ReplaceAll(strings.ReplaceAll(r.pattern, "{run}", r.id), "{n}", strconv.Itoa(n))
}

// wildcard is the filter covering every subject.
func (r *run) wildcard() string {
	return strings.Replace(strings.ReplaceAll(r.pattern, "{run}", r.id), "{n}", r.c.protocol().wildcard(), 1)
}

// event records one event, when there is a sink; cause is when its cause
// began (a message's send time), the zero time for now.
func (r *run) event(ev int, cause time.Time, lat time.Duration, bytes int64, class driver.Class, err error) {
	if r.sink != nil {
		r.sink.Event(ev, cause, lat, bytes, 0, class, err)
	}
}

// Observe implements driver.Events: a new repetition begins.
func (c *Config) Observe(sink driver.Sink) {
	r := newRun(c, sink)
	if old := c.cur.Swap(r); old != nil {
		old.close()
	}
	if r.ctl != nil {
		// The segments meet on the control subject before the load.
		r.ctl.start()
		r.ctl.meet(c.Timeout.D())
	}
}

// current returns the repetition in progress, starting one without a sink
// when Observe was not called (a Config used outside the engine).
func (c *Config) current() *run {
	if r := c.cur.Load(); r != nil {
		return r
	}
	c.cur.CompareAndSwap(nil, newRun(c, nil))
	return c.cur.Load()
}

// Drain implements driver.Events. Every user has stopped, so nothing more
// is published: it waits until every owed delivery has arrived, or no
// message has arrived for drain_idle, or ctx ends; in a distributed run
// also until every other segment announced its final counts (then only
// ctx ends the wait). Then it closes the connections and records every
// owed message that never arrived: a "deliver" event of class lost when
// its subscriber was connected, a "missed" event of class lost when it
// was disconnected by a broken connection.
func (c *Config) Drain(ctx context.Context) error {
	r := c.cur.Load()
	if r == nil {
		return nil
	}
	if r.ctl != nil {
		r.ctl.end()
	}
	idle := c.DrainIdle.D()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, since := r.stats.delivered.Load(), time.Now()
	finals := r.ctl == nil
wait:
	for {
		if !finals && r.ctl.finals() {
			finals, since = true, time.Now()
		}
		got := r.stats.delivered.Load()
		if finals && got >= r.reg.expected() {
			break
		}
		if got != last {
			last, since = got, time.Now()
		} else if finals && time.Since(since) >= idle {
			break
		}
		select {
		case <-ctx.Done():
			break wait
		case <-tick.C:
		}
	}
	r.close()
	return r.settle()
}

// errLost is the sample message of deliveries lost while their
// subscribers were connected.
type errLost struct{ t tally }

func (e errLost) Error() string {
	return fmt.Sprintf("%s of %s owed deliveries never arrived while their subscribers were connected",
		textfmt.Num(float64(e.t.Lost-e.t.Missed)), textfmt.Num(float64(e.t.Expected)))
}

// errMissed is the sample message of deliveries owed while their
// subscribers were disconnected: how many, and each outage's part.
type errMissed struct {
	missed  uint64
	outages []outage
}

func (e errMissed) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s owed deliveries were missed while their subscribers were disconnected by broken connections",
		textfmt.Num(float64(e.missed)))
	for i, o := range e.outages {
		if o.missed == 0 {
			continue
		}
		fmt.Fprintf(&b, "; outage %d (%s after the start, %s long, %s connections broken): %s", i+1, textfmt.Secs(o.at.Seconds()),
			textfmt.Secs(o.end.Sub(o.start).Seconds()), textfmt.Num(float64(o.conns)), textfmt.Num(float64(o.missed)))
	}
	return b.String()
}

// settle computes every subscription's accounting, records what was owed
// and never arrived, and writes the accounting file. The connections are
// closed.
func (r *run) settle() error {
	r.mu.Lock()
	subs := r.subs
	missed := make([]uint64, len(r.outages))
	r.mu.Unlock()
	var total tally
	var rows []accountRow
	for _, s := range subs {
		s.mu.Lock()
		for _, st := range s.settle(missed) {
			total.add(st.tally)
			if r.c.AccountingFile != "" {
				rows = append(rows, accountRow{user: s.user, key: st.key, tally: st.tally})
			}
		}
		s.mu.Unlock()
	}
	r.stats.lost.Store(total.Lost)
	r.stats.missed.Store(total.Missed)
	r.mu.Lock()
	r.final, r.drained = total, true
	for i := range missed {
		r.outages[i].missed = missed[i]
	}
	outages := append([]outage(nil), r.outages...)
	r.mu.Unlock()
	if n := total.Lost - total.Missed; n > 0 {
		err := errLost{t: total}
		for range n {
			r.event(evDeliver, time.Time{}, -1, 0, driver.Lost, err)
		}
	}
	if total.Missed > 0 {
		err := errMissed{missed: total.Missed, outages: outages}
		for range total.Missed {
			r.event(evMissed, time.Time{}, -1, 0, driver.Lost, err)
		}
	}
	if r.ctl != nil {
		if err := r.ctl.unaccounted(total); err != nil {
			r.event(evDeliver, time.Time{}, -1, 0, driver.Other, err)
		}
	}
	if r.c.AccountingFile != "" {
		return r.writeAccounting(rows)
	}
	return nil
}

// Final returns the accounting of the last drained repetition: owed
// (expected), received, lost (of which missed while disconnected),
// duplicated, out-of-order and early deliveries, over all subscribers. ok
// is false before a drain.
func (c *Config) Final() (t Tally, ok bool) {
	r := c.cur.Load()
	if r == nil {
		return Tally{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return Tally(r.final), r.drained
}

// Tally is an accounting of deliveries (see Final).
type Tally tally

// close ends the run's connections and readers. It is idempotent.
func (r *run) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.done)
	r.cancel()
	var open *outage
	if n := len(r.outages); n > 0 && r.outages[n-1].end.IsZero() {
		r.outages[n-1].end = time.Now()
		o := r.outages[n-1]
		open = &o
	}
	loops, sessions := r.loops, r.sessions
	r.mu.Unlock()
	if open != nil {
		r.event(evOutage, open.start, open.end.Sub(open.start), 0, driver.OK, nil)
	}
	if r.ctl != nil {
		r.ctl.stop()
	}
	for _, l := range loops {
		l.stop()
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.finish)
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { r.readers.Wait(); r.pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// open returns an error when the run is over: no connection is taken on.
func (r *run) open() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the run is over")
	}
	return nil
}

// keepSub lists a subscription for the drain's accounting, once. It takes
// the run's lock: call it with the subscription's held, never the reverse.
func (r *run) keepSub(s *subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !s.kept {
		s.kept = true
		r.subs = append(r.subs, s)
	}
}

// adoptSession keeps a session with its own connection, to close it at the
// drain, and counts its reader goroutine.
func (r *run) adoptSession(s *session) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the run is over")
	}
	if !s.adopted {
		s.adopted = true
		r.sessions = append(r.sessions, s)
	}
	r.readers.Add(1)
	return nil
}

// loopFor returns the epoll loop of the next passive subscriber: the
// loops are started on demand and take subscribers in turn.
func (r *run) loopFor() (*loop, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the run is over")
	}
	if len(r.loops) < r.c.readers {
		l, err := newLoop(r)
		if err != nil {
			return nil, err
		}
		r.loops = append(r.loops, l)
	}
	l := r.loops[r.next%len(r.loops)]
	r.next++
	return l, nil
}

// lost records a connection the broker, the network or the keep-alive
// broke, and has its session reconnect. The subscription's accounting goes
// on: what is published while the user is disconnected is still owed to
// it, missed while disconnected when it never arrives (see track.go); only
// a user that leaves by op disconnect is owed nothing while away. The
// event "connect" counts the break, with the broker's reason when it gave
// one. Call with ep.mu held.
func (r *run) lost(ep *endpoint, err error) {
	r.stats.connected.Add(-1)
	r.stats.disconnects.Add(1)
	if err == errDead {
		r.stats.dead.Add(1)
	}
	if ep.err != nil {
		err = ep.err
	}
	s := ep.sess
	again := s != nil && !s.closing.Load()
	if again {
		o := r.broke()
		if sub := ep.sub; sub != nil {
			sub.broke(o)
		}
	}
	cid := ep.pc.serverID()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.pending.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.pending.Done()
		// Ask the server why, when it can say, off the reader's path.
		if why := r.c.closeReason(cid); why != "" {
			err = fmt.Errorf("%s (server: %w)", why, err)
			if strings.Contains(why, "Slow Consumer") {
				r.stats.slow.Add(1)
				err = fmt.Errorf("slow consumer cut off by the server: %w", err)
				r.event(evSlowConsumer, time.Time{}, -1, 0, driver.OK, nil)
			}
		}
		class := driver.Classify(err)
		if class == driver.OK || class == driver.Other {
			class = driver.IO
		}
		r.event(evConnect, time.Time{}, -1, 0, class, fmt.Errorf("connection lost: %w", err))
		if again {
			s.redial()
		}
	}()
}
