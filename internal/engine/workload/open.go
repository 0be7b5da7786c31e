package workload

import (
	"math"
	"time"

	"github.com/throng-io/throng/internal/plan"
)

// Open is the aggregate open model: a share of the plan's arrivals (each
// with its time and action, plan.Arrivals) served by a pool of sessions.
// The rules:
//
//   - An arrival that comes due goes to a free session at once.
//   - If none is free it waits in a FIFO, and the next session to be free
//     takes the oldest waiting arrival.
//   - An arrival that could not start within max_delay of its time is
//     dropped and counted, never run late: its wait is what the latency of
//     the others shows (they are timed from their arrival's time).
//   - The FIFO is bounded (QueueSize): an arrival that finds it full
//     pushes out the oldest, the closest to its own drop anyway.
//   - When the arrivals are over and none waits, the sessions leave (once
//     the actions in flight are done: that is the executor's to see).
//
// Its zero value is not useful: use NewOpen.
type Open struct {
	src      *plan.Arrivals
	maxDelay time.Duration
	at       time.Duration // the source's next arrival: time, action
	action   int
	have     bool
	q        queue
}

// NewOpen returns the aggregate open model over the arrivals of src, with
// a FIFO of size waiting arrivals (QueueSize).
func NewOpen(src *plan.Arrivals, maxDelay time.Duration, size int) Open {
	o := Open{src: src, maxDelay: maxDelay, q: queue{buf: make([]arrival, max(size, 1))}}
	o.advance()
	return o
}

// QueueSize bounds the FIFO of one of shares equal shares of p's arrivals:
// the arrivals of max_delay at the full rate, with room for Poisson bursts.
func QueueSize(p *plan.Plan, shares int) int {
	x := p.Rate * p.MaxDelay.Seconds() / float64(max(shares, 1))
	x = 1.5*x + 8*math.Sqrt(x) + 64
	return int(min(x, 1<<20))
}

func (o *Open) advance() {
	_, o.at, o.action, o.have = o.src.Next()
}

// NextAt returns the time of the next arrival not yet due, if any.
func (o *Open) NextAt() (time.Duration, bool) { return o.at, o.have }

// Waiting returns how many arrivals wait for a free session.
func (o *Open) Waiting() int { return o.q.n }

// Next returns the next step at time now; free says whether a session is
// free. Run is returned only when one is: give it the action. Drop: count
// the action dropped. Wait: nothing to do until At (Never: until a session
// is free). Leave: the arrivals are over and none waits.
func (o *Open) Next(now time.Duration, free bool) Step {
	for {
		if o.q.n > 0 {
			if w := o.q.front(); now-w.at > o.maxDelay {
				o.q.pop()
				return Step{Kind: Drop, At: w.at, Action: int(w.action)}
			}
			if free {
				w := o.q.pop()
				return Step{Kind: Run, At: w.at, Action: int(w.action)}
			}
		}
		if !o.have || o.at > now {
			break
		}
		at, a := o.at, o.action
		o.advance()
		switch {
		case now-at > o.maxDelay:
			return Step{Kind: Drop, At: at, Action: a}
		case o.q.n == 0 && free:
			return Step{Kind: Run, At: at, Action: a}
		case o.q.full():
			w := o.q.pop()
			o.q.push(arrival{at: at, action: int32(a)})
			return Step{Kind: Drop, At: w.at, Action: int(w.action)}
		}
		o.q.push(arrival{at: at, action: int32(a)})
	}
	switch {
	case o.have:
		return Step{Kind: Wait, At: o.at}
	case o.q.n > 0:
		return Step{Kind: Wait, At: Never}
	}
	return Step{Kind: Leave, At: now}
}

// arrival is one arrival waiting for a session.
type arrival struct {
	at     time.Duration
	action int32
}

// queue is a bounded FIFO of arrivals, allocated once.
type queue struct {
	buf     []arrival
	head, n int
}

func (q *queue) full() bool     { return q.n == len(q.buf) }
func (q *queue) front() arrival { return q.buf[q.head] }
func (q *queue) push(a arrival) { q.buf[(q.head+q.n)%len(q.buf)] = a; q.n++ }
func (q *queue) pop() arrival {
	a := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return a
}
