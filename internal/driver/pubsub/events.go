package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// The driver's event actions, in the order of EventActions.
const (
	evDeliver    = iota // a message delivered (latency: from its send time); lost ones at the drain
	evConnect           // a connection set up (latency: dial to confirmed subscription) or lost
	evDuplicate         // a message delivered again
	evOutOfOrder        // a message delivered after a later one of its stream (also a delivery)
)

var eventNames = []string{"deliver", "connect", "duplicate", "out_of_order"}

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

	mu       sync.Mutex
	eps      []*endpoint // every subscribing endpoint, accounted at the drain
	sessions []*session  // sessions with their own connection, closed at the drain
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
	lost        atomic.Uint64 // known at the drain
	connected   atomic.Int64  // open subscriber connections
	disconnects atomic.Uint64 // connections the broker or the network broke
	slow        atomic.Uint64 // of which the server cut off as slow consumers
}

func newRun(c *Config, sink driver.Sink) *run {
	ctx, cancel := context.WithCancel(context.Background())
	return &run{c: c, sink: sink, reg: newRegistry(c.Subjects), rss0: selfRSS(), done: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// event records one event, when there is a sink.
func (r *run) event(ev int, lat time.Duration, bytes int64, class driver.Class, err error) {
	if r.sink != nil {
		r.sink.Event(ev, time.Time{}, lat, bytes, 0, class, err)
	}
}

// Observe implements driver.Events: a new repetition begins.
func (c *Config) Observe(sink driver.Sink) {
	if old := c.cur.Swap(newRun(c, sink)); old != nil {
		old.close()
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
// is published: it waits until every expected delivery has arrived, or no
// message has arrived for drain_idle, or ctx ends; then it closes the
// connections and records every expected message that never arrived as a
// "deliver" event of class Lost.
func (c *Config) Drain(ctx context.Context) error {
	r := c.cur.Load()
	if r == nil {
		return nil
	}
	idle := c.DrainIdle.D()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, since := r.stats.delivered.Load(), time.Now()
wait:
	for {
		got := r.stats.delivered.Load()
		if got >= r.reg.expected() {
			break
		}
		if got != last {
			last, since = got, time.Now()
		} else if time.Since(since) >= idle {
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

// errLost is the sample message of lost deliveries: how many, and how many
// of them were in flight when connections broke, during how many outages.
type errLost struct {
	t       tally
	outages int
	length  time.Duration
}

func (e errLost) Error() string {
	msg := fmt.Sprintf("%d of %d expected deliveries never arrived", e.t.Lost, e.t.Expected)
	if e.outages > 0 {
		msg += fmt.Sprintf(": %d in flight when connections broke (%d outage(s), %s in all), %d while connected",
			e.t.Outage, e.outages, e.length.Round(time.Millisecond), e.t.Lost-e.t.Outage)
	}
	return msg
}

// settle computes every subscriber's accounting, records the lost
// messages and writes the accounting file. The connections are closed.
func (r *run) settle() error {
	r.mu.Lock()
	eps := r.eps
	r.mu.Unlock()
	var total tally
	var rows []accountRow
	for _, ep := range eps {
		ep.mu.Lock()
		for _, st := range ep.settle() {
			total.add(st.tally)
			if r.c.AccountingFile != "" {
				rows = append(rows, accountRow{user: ep.user, stream: st.stream, tally: st.tally})
			}
		}
		ep.mu.Unlock()
	}
	r.stats.lost.Store(total.Lost)
	r.mu.Lock()
	r.final, r.drained = total, true
	r.mu.Unlock()
	if total.Lost > 0 {
		_, n, length := r.outageTotals()
		err := errLost{t: total, outages: n, length: length}
		for range total.Lost {
			r.event(evDeliver, -1, 0, driver.Lost, err)
		}
	}
	if r.c.AccountingFile != "" {
		return r.writeAccounting(rows)
	}
	return nil
}

// Final returns the accounting of the last drained repetition: expected,
// received, lost, duplicated, out-of-order and early deliveries, over all
// subscribers. ok is false before a drain.
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
	if n := len(r.outages); n > 0 && r.outages[n-1].end.IsZero() {
		r.outages[n-1].end = time.Now()
	}
	loops, sessions := r.loops, r.sessions
	r.mu.Unlock()
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

// adopt keeps an endpoint for the drain's accounting.
func (r *run) adopt(ep *endpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the run is over")
	}
	if ep.subscribed() {
		r.keep(ep)
	}
	return nil
}

// keep lists ep in the run's endpoints, once. Call with r.mu held.
func (r *run) keep(ep *endpoint) {
	if !ep.adopted {
		ep.adopted = true
		r.eps = append(r.eps, ep)
	}
}

// adoptSubscriber keeps an endpoint that subscribes with op subscribe
// for the drain's accounting.
func (r *run) adoptSubscriber(ep *endpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the run is over")
	}
	r.keep(ep)
	return nil
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

// lost records a connection the broker or the network broke, and has its
// session reconnect. Unless the broker keeps the session (persistent MQTT),
// the subscription's accounting ends now: what was published until now and
// never arrived is lost, and counts as lost in the outage. The event
// "connect" counts the break, with the broker's reason when it gave one.
// Call with ep.mu held.
func (r *run) lost(ep *endpoint, err error) {
	r.stats.connected.Add(-1)
	r.stats.disconnects.Add(1)
	if !ep.persistent {
		ep.freeze()
	}
	if ep.err != nil {
		err = ep.err
	}
	s := ep.sess
	again := s != nil && !s.closing.Load()
	if again {
		r.broke()
	}
	cid := ep.cid
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
			}
		}
		class := driver.Classify(err)
		if class == driver.OK || class == driver.Other {
			class = driver.IO
		}
		r.event(evConnect, -1, 0, class, fmt.Errorf("connection lost: %w", err))
		if again {
			s.redial()
		}
	}()
}
