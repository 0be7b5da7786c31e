package netloop

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine/workload"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/rawsock"
	"github.com/throng-io/throng/internal/scenario"
)

// maxWait bounds every wait of a loop, so it notices a stop (ctx) soon.
const maxWait = 20 * time.Millisecond

// Batches: an io_uring wait holds out for a third of the exchanges in
// flight, at most maxBatch, but only when that is at least minBatch;
// otherwise it returns at the first completion. Measured against nginx on
// this project's 2-vCPU machines (see the package's report): waits for 2
// to 10 completions cost more kernel CPU per request than waits for 1
// (every multishot receive still wakes the waiting thread), while waits for
// 12 to 32 cut it by 10 to 25 %.
const (
	minBatch = 12
	maxBatch = 32
)

// yieldEvery is how often a loop thread yields to the Go scheduler. The
// loop goroutine never blocks in Go, so without it the runtime's sysmon,
// after 10 ms on the same scheduling tick, takes the thread's P away at
// every tick it finds the thread in its blocking wait (Syscall) and wakes
// another thread to take it: measured, that cost 10 to 20 % more CPU per
// request. A yield every few milliseconds costs two thread switches. (The
// rule is rawsock.Policy's; the loop applies it itself, for either layer.)
const yieldEvery = 5 * time.Millisecond

// loop is one event-loop thread: its users (or sessions), their timers and
// its I/O layer. Everything in it belongs to the thread's goroutine, locked
// to its OS thread.
type loop struct {
	p     *plan.Plan
	cfg   *Config
	h     *Hooks
	rec   *metrics.Recorder
	io    ioLayer
	stop  *atomic.Bool
	conns []conn
	now   time.Duration // the clock, read once per wakeup

	open  bool // aggregate open model (else closed)
	live  int  // users (sessions) not stopped yet
	depth int  // > 0 while an exchange is being started: see after

	inflight int             // busy conns
	yield    rawsock.Yielder // every yieldEvery

	// Deadlines: busy conns, oldest first (see deadlines.go).
	dlHead, dlTail int32

	// Closed model: users waiting for a time (their start or the end of a
	// think time), and users due now.
	heap []int32
	runq ring

	// Open model: the thread's share of the arrivals (and those waiting
	// for a session), and the idle sessions.
	disp workload.Open
	idle []int32

	// HTTP/2 (h2.go): the connections users share; nil for HTTP/1.1.
	h2 *h2loop
}

// runThread is the body of loop thread t of threads: lock the OS thread,
// set up, report, wait for the go (all threads set up), run.
func runThread(t, threads int, p *plan.Plan, cfg *Config, h *Hooks, sa *rawsock.Addr, stop *atomic.Bool, ready chan<- error, goOn <-chan bool) {
	// The thread stays locked until the goroutine ends, and then dies with
	// it: an io_uring ring set up with SINGLE_ISSUER belongs to this thread.
	runtime.LockOSThread()
	tuneThread()
	l := newLoop(t, threads, p, cfg, h, stop)
	io, err := newIO(cfg.Kind, l, sa, len(l.conns))
	ready <- err
	if err != nil {
		return
	}
	l.io = io
	if !<-goOn {
		io.release()
		return
	}
	h.Thread(gettid())
	l.run()
}

func newLoop(t, threads int, p *plan.Plan, cfg *Config, h *Hooks, stop *atomic.Bool) *loop {
	l := &loop{
		p: p, cfg: cfg, h: h, rec: h.Recorders[t], stop: stop,
		open:   p.Model == scenario.Open,
		dlHead: -1, dlTail: -1,
		yield: rawsock.NewYielder(yieldEvery),
	}
	n := 0
	for i := t; i < len(p.Users); i += threads {
		n++
	}
	l.conns = make([]conn, n)
	for k := range l.conns {
		u := p.Users[t+k*threads]
		l.conns[k] = conn{
			idx: int32(k), fd: -1,
			parser: cfg.NewParser(), dlPrev: -1, dlNext: -1,
		}
		if !l.open {
			l.conns[k].w = workload.NewUser(p, u, workload.Options{Take: h.Take})
		}
	}
	if cfg.H2Streams > 0 {
		l.h2 = newH2Loop(l, cfg.H2Streams)
	}
	l.heap = make([]int32, 0, n)
	l.runq = newRing(n)
	if l.open {
		l.idle = make([]int32, 0, n)
		l.disp = workload.NewOpen(p.Arrivals(p.Segment.ThreadShare(t, threads)), p.MaxDelay, workload.QueueSize(p, threads))
	}
	return l
}

// run serves the thread's users until they are all done or the run stops.
func (l *loop) run() {
	if l.stop.Load() {
		l.io.release()
		return
	}
	l.now = l.h.Now()
	l.begin()
	for l.live > 0 {
		if l.stop.Load() {
			l.abort()
			break
		}
		l.step()
	}
	l.io.release()
}

// step is one turn of the loop: wait for the kernel or the next timer,
// handle what happened, then what is due.
func (l *loop) step() {
	l.yield.Yield(l.now)
	timeout, batch := l.plan()
	if l.h2 != nil {
		l.h2Flush() // the frames of this turn, a write per connection
	}
	l.io.wait(timeout, batch)
	l.now = l.h.Now()
	l.io.reap()
	l.expire()
	l.runReady()
	if l.open {
		l.arrivals()
	} else {
		l.timers()
	}
}

// plan returns how long the next wait may last and, for io_uring, how many
// completions it may hold out for (see minBatch): never more than can
// complete, and only for a short time (batchWait).
func (l *loop) plan() (time.Duration, int) {
	if l.runq.n > 0 {
		return 0, 0
	}
	d := maxWait
	if at, ok := l.nextTimer(); ok {
		d = min(d, at-l.now)
	}
	if d <= 0 {
		return 0, 0
	}
	batch := 1
	if l.h2 != nil {
		// A completion carries a connection's frames: wait for one from
		// each connection with streams open (within batchWait).
		if k := l.h2.busy; k >= 2 {
			batch = min(k, maxBatch)
		}
		return d, batch
	}
	if k := l.inflight / 3; k >= minBatch {
		batch = min(k, maxBatch)
	}
	return d, batch
}

// nextTimer returns the earliest time something is due: a user's start or
// the end of a think time, an arrival, a request's deadline.
func (l *loop) nextTimer() (time.Duration, bool) {
	at, ok := time.Duration(0), false
	if len(l.heap) > 0 {
		at, ok = l.conns[l.heap[0]].next, true
	}
	if next, have := l.disp.NextAt(); l.open && have && (!ok || next < at) {
		at, ok = next, true
	}
	if l.dlHead >= 0 && (!ok || l.conns[l.dlHead].deadline < at) {
		at, ok = l.conns[l.dlHead].deadline, true
	}
	return at, ok
}

// abort ends the run at once (ctx ended): actions in flight are not
// recorded but counted as aborted, sockets are closed, users leave.
func (l *loop) abort() {
	for i := range l.conns {
		c := &l.conns[i]
		if c.busy {
			c.busy = false
			l.h.Aborted()
		}
		l.closeConn(c)
		if c.state == userActive {
			c.state = userDone
			l.h.Stopped(false)
		}
	}
	l.live = 0
	l.inflight = 0
	l.dlHead, l.dlTail = -1, -1
}

// closeConn closes c's socket, if any. Events of that socket still queued
// in the kernel or the layer become stale (gen).
func (l *loop) closeConn(c *conn) {
	if c.fd < 0 {
		return
	}
	l.io.shut(c)
	c.fd = -1
	c.gen++
	c.reused = false
	c.connecting = false
	c.out = nil
	l.h.ConnClosed()
}

// stopUser makes c leave: its connection is closed.
func (l *loop) stopUser(c *conn, finished bool) {
	c.state = userDone
	if l.h2 != nil {
		l.h2Leave(c)
	} else {
		l.closeConn(c)
	}
	l.live--
	l.h.Stopped(finished)
}

// statusError returns the sample error of a completed response of a class
// other than OK: the protocol's own (driver.WireErrorer, like "HTTP status
// 503"), or the class's generic one. Neither allocates.
func (l *loop) statusError(c *conn, class driver.Class) error {
	if we, ok := c.parser.(driver.WireErrorer); ok {
		if err := we.WireError(); err != nil {
			return err
		}
	}
	if class == driver.Protocol {
		return errProtocol
	}
	return classErrs[class]
}
