package netloop

import (
	"math"
	"time"

	"github.com/throng-io/throng/internal/plan"
)

// This file holds the scheduling rules, the same as the engine's goroutine
// executor (internal/engine/goroutines.go):
//
// Closed model: a user logs on at its start, then loops: it picks an action
// (one rng.Float64 per iteration), counts the iteration, does the action
// (connecting when it has no connection), draws its think time, and is due
// again at the completion time plus the think time. It leaves when it did
// its iterations (finished) or when its next start is at or after its stop.
// A failed connect is recorded (class dial) and uses up the iteration.
//
// Open model with aggregate arrivals: every session logs on at once; an
// arrival goes to an idle session at its time, or waits in a bounded FIFO
// for one; an arrival that cannot start within MaxDelay of its time is
// dropped and counted. Sessions leave when the arrivals are over and the
// work in flight is done.

// begin logs the users on (open model) or puts them on the timer heap to
// log on at their start (closed model).
func (l *loop) begin() {
	l.live = len(l.conns)
	if !l.open {
		for i := range l.conns {
			l.heapPush(&l.conns[i])
		}
		l.timers()
		return
	}
	for i := len(l.conns) - 1; i >= 0; i-- {
		c := &l.conns[i]
		c.state = userActive
		l.h.Started()
		l.idle = append(l.idle, c.idx)
	}
	l.advance()
	l.arrivals()
}

// after moves c on once its exchange is over (recorded). While an exchange
// is being started (depth > 0), c goes to the ready queue instead, so that
// a connect that fails at once (a refused port) cannot recurse: the loop
// takes the ready queue at its next turn, after a look at the kernel.
func (l *loop) after(c *conn) {
	if l.open {
		if l.depth == 0 {
			l.serve(c)
		} else {
			l.runq.push(c.idx)
		}
		return
	}
	c.next = l.now + l.p.ThinkTime(c.rng)
	if l.depth == 0 {
		l.closedIter(c)
	} else {
		l.runq.push(c.idx)
	}
}

// runReady takes the users that were ready at the start of this turn.
func (l *loop) runReady() {
	for n := l.runq.n; n > 0; n-- {
		c := &l.conns[l.runq.pop()]
		if l.open {
			l.serve(c)
		} else {
			l.closedIter(c)
		}
	}
}

// --- closed model

// timers starts the users whose time has come.
func (l *loop) timers() {
	for len(l.heap) > 0 {
		c := &l.conns[l.heap[0]]
		if c.next > l.now {
			return
		}
		l.heapPop()
		if c.state == userWaiting {
			c.state = userActive
			l.h.Started()
		}
		l.closedIter(c)
	}
}

// closedIter begins c's next iteration, due at c.next, or makes it wait
// for that time, or makes it leave.
func (l *loop) closedIter(c *conn) {
	p := l.p
	if p.Iterations > 0 && c.done >= p.Iterations {
		l.stopUser(c, true)
		return
	}
	if c.u.Stop != plan.Open && c.next >= c.u.Stop {
		l.stopUser(c, false)
		return
	}
	if c.next > l.now {
		l.heapPush(c)
		return
	}
	if p.Total > 0 && !l.h.Take() {
		l.stopUser(c, true)
		return
	}
	a := p.ChooseAction(c.rng.Float64())
	c.done++
	l.startExchange(c, a, c.next)
}

// --- open model

// advance fetches the thread's next arrival.
func (l *loop) advance() {
	_, at, a, ok := l.arr.Next()
	l.nextAt, l.nextAct, l.haveArr = at, a, ok
}

// late reports whether an arrival at at can no longer start.
func (l *loop) late(at time.Duration) bool { return l.now-at > l.p.MaxDelay }

// arrivals hands the arrivals that are due to idle sessions, or queues
// them, and ends the sessions when there is nothing left to do.
func (l *loop) arrivals() {
	for l.fifo.n > 0 && l.late(l.fifo.front().at) {
		w := l.fifo.pop()
		l.rec.RecordDropped(int(w.action), w.at)
	}
	for n := 0; l.haveArr && l.nextAt <= l.now; n++ {
		// Arrivals far behind (a rate beyond the machine) could keep this
		// loop busy for minutes: a stop is seen within a batch.
		if n%4096 == 4095 && l.stop.Load() {
			return
		}
		at, a := l.nextAt, l.nextAct
		l.advance()
		switch {
		case l.late(at):
			l.rec.RecordDropped(a, at)
		case l.fifo.n == 0 && len(l.idle) > 0:
			c := l.popIdle()
			l.startExchange(c, a, at)
		default:
			if l.fifo.full() {
				// Bounded: the oldest is the closest to its drop anyway.
				w := l.fifo.pop()
				l.rec.RecordDropped(int(w.action), w.at)
			}
			l.fifo.push(arrival{at: at, action: int32(a)})
		}
	}
	for l.fifo.n > 0 && len(l.idle) > 0 {
		l.serve(l.popIdle())
	}
	if !l.haveArr && l.inflight == 0 && l.fifo.n == 0 && l.runq.n == 0 {
		for i := range l.conns {
			if c := &l.conns[i]; c.state == userActive {
				l.stopUser(c, false)
			}
		}
	}
}

// serve gives the free session c the oldest waiting arrival, or makes it
// idle.
func (l *loop) serve(c *conn) {
	for l.fifo.n > 0 {
		w := l.fifo.pop()
		if l.late(w.at) {
			l.rec.RecordDropped(int(w.action), w.at)
			continue
		}
		l.startExchange(c, int(w.action), w.at)
		return
	}
	l.idle = append(l.idle, c.idx)
}

// popIdle takes the most recently idle session: its connection is the
// most likely to be open and warm.
func (l *loop) popIdle() *conn {
	i := l.idle[len(l.idle)-1]
	l.idle = l.idle[:len(l.idle)-1]
	return &l.conns[i]
}

// arrival is one aggregate arrival waiting for a session.
type arrival struct {
	at     time.Duration
	action int32
}

// fifo is a bounded queue of arrivals, allocated once.
type fifo struct {
	buf     []arrival
	head, n int
}

func newFIFO(size int) fifo { return fifo{buf: make([]arrival, size)} }

// fifoSize bounds the FIFO of one thread: the arrivals of MaxDelay at the
// full rate with room for Poisson bursts.
func fifoSize(p *plan.Plan, threads int) int {
	x := p.Rate * p.MaxDelay.Seconds() / float64(threads)
	x = 1.5*x + 8*math.Sqrt(x) + 64
	return int(min(x, 1<<20))
}

func (f *fifo) full() bool      { return f.n == len(f.buf) }
func (f *fifo) front() *arrival { return &f.buf[f.head] }
func (f *fifo) push(a arrival)  { f.buf[(f.head+f.n)%len(f.buf)] = a; f.n++ }
func (f *fifo) pop() arrival {
	a := f.buf[f.head]
	f.head = (f.head + 1) % len(f.buf)
	f.n--
	return a
}

// ring is a queue of conn indexes; each conn is in it at most once.
type ring struct {
	buf     []int32
	head, n int
}

func newRing(size int) ring { return ring{buf: make([]int32, max(size, 1))} }

func (r *ring) push(i int32) { r.buf[(r.head+r.n)%len(r.buf)] = i; r.n++ }
func (r *ring) pop() int32 {
	i := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return i
}

// --- timer heap (closed model): users by next, a binary min-heap.

func (l *loop) heapLess(i, j int) bool {
	return l.conns[l.heap[i]].next < l.conns[l.heap[j]].next
}

func (l *loop) heapSwap(i, j int) { l.heap[i], l.heap[j] = l.heap[j], l.heap[i] }

func (l *loop) heapPush(c *conn) {
	l.heap = append(l.heap, c.idx)
	i := len(l.heap) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !l.heapLess(i, parent) {
			break
		}
		l.heapSwap(i, parent)
		i = parent
	}
}

func (l *loop) heapPop() {
	last := len(l.heap) - 1
	l.heapSwap(0, last)
	l.heap = l.heap[:last]
	i := 0
	for {
		small, left, right := i, 2*i+1, 2*i+2
		if left < last && l.heapLess(left, small) {
			small = left
		}
		if right < last && l.heapLess(right, small) {
			small = right
		}
		if small == i {
			return
		}
		l.heapSwap(i, small)
		i = small
	}
}
