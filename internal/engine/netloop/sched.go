package netloop

import "github.com/throng-io/throng/internal/engine/workload"

// This file moves users on. What happens next is not decided here: the
// closed model's users follow workload.User (one per conn) and the
// aggregate open model's arrivals workload.Open (one per thread), the same
// steps as the engine's goroutine executor takes. The loop only waits
// (timer heap, run queue, kernel) and does the exchanges.
//
// A connect is part of an exchange here: a failed one is recorded against
// the action (class dial) and uses up the iteration, like any failed
// action (there is no separate log-on).

// begin starts the closed model's users at their start (the timer heap
// holds the ones not due yet), or logs the open model's sessions on.
func (l *loop) begin() {
	l.live = len(l.conns)
	if !l.open {
		for i := range l.conns {
			l.userStep(&l.conns[i])
		}
		return
	}
	for i := len(l.conns) - 1; i >= 0; i-- {
		c := &l.conns[i]
		c.state = userActive
		l.h.Started()
		l.idle = append(l.idle, c.idx)
	}
	l.arrivals()
}

// after moves c on once its exchange is over (recorded). While an exchange
// is being started (depth > 0), c goes to the ready queue instead, so that
// a connect that fails at once (a refused port) cannot recurse: the loop
// takes the ready queue at its next turn, after a look at the kernel.
func (l *loop) after(c *conn) {
	if !l.open {
		c.w.Done(l.now)
	}
	if l.depth == 0 {
		l.ready(c)
	} else {
		l.runq.push(c.idx)
	}
}

// ready moves on a user (or session) that is free.
func (l *loop) ready(c *conn) {
	if l.open {
		l.idle = append(l.idle, c.idx)
		l.arrivals()
	} else {
		l.userStep(c)
	}
}

// runReady takes the users that were ready at the start of this turn.
func (l *loop) runReady() {
	for n := l.runq.n; n > 0; n-- {
		l.ready(&l.conns[l.runq.pop()])
	}
}

// --- closed model

// timers moves on the users whose time has come.
func (l *loop) timers() {
	for len(l.heap) > 0 {
		c := &l.conns[l.heap[0]]
		if c.next > l.now {
			return
		}
		l.heapPop()
		l.userStep(c)
	}
}

// userStep takes c's user's steps until it waits, runs an action or
// leaves.
func (l *loop) userStep(c *conn) {
	for {
		s := c.w.Next(l.now)
		switch s.Kind {
		case workload.Wait:
			c.next = s.At
			l.heapPush(c)
			return
		case workload.Start:
			c.state = userActive
			l.h.Started()
		case workload.Logon:
			c.w.LoggedOn(l.now, true) // the first exchange connects
		case workload.Run:
			l.startExchange(c, s.Action, s.At)
			return
		case workload.Drop:
			l.rec.RecordDropped(s.Action, s.At)
		case workload.Leave:
			l.stopUser(c, s.Finished)
			return
		}
	}
}

// --- open model

// arrivals takes the steps of the thread's arrivals that are due: each
// runs on an idle session or is dropped (or waits, inside workload.Open).
// When the arrivals are over and nothing is in flight, the sessions leave.
func (l *loop) arrivals() {
	for n := 0; ; n++ {
		// Arrivals far behind (a rate beyond the machine) could keep this
		// loop busy for minutes: a stop is seen within a batch.
		if n%4096 == 4095 && l.stop.Load() {
			return
		}
		s := l.disp.Next(l.now, len(l.idle) > 0)
		switch s.Kind {
		case workload.Run:
			l.startExchange(l.popIdle(), s.Action, s.At)
		case workload.Drop:
			l.rec.RecordDropped(s.Action, s.At)
		case workload.Leave:
			if l.inflight == 0 && l.runq.n == 0 {
				for i := range l.conns {
					if c := &l.conns[i]; c.state == userActive {
						l.stopUser(c, false)
					}
				}
			}
			return
		default:
			return
		}
	}
}

// popIdle takes the most recently idle session: its connection is the
// most likely to be open and warm.
func (l *loop) popIdle() *conn {
	i := l.idle[len(l.idle)-1]
	l.idle = l.idle[:len(l.idle)-1]
	return &l.conns[i]
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
