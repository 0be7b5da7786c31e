package output

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// Sink receives a run's intervals, one call at a time, from a goroutine of
// its own. It may be slow: the run never waits for it (see Fanout).
type Sink interface {
	// Write delivers one interval; the sink must not change it. An error
	// drops the sink for the rest of the run. Write should return soon
	// after ctx is done.
	Write(ctx context.Context, iv *Interval) error
	// Close flushes what the sink holds and releases it, within ctx.
	Close(ctx context.Context) error
}

// DefaultQueue is how many intervals an output may fall behind before it
// is dropped: a minute of one-second intervals.
const DefaultQueue = 64

// Fanout sends every interval to its outputs, each through a queue of its
// own of bounded length, and never blocks: an output whose queue is full
// (it fell that many intervals behind), or whose Write failed, is dropped:
// it gets no more intervals, and the intervals it did not get are counted.
// Send is called from one goroutine; Close once, after the last Send.
type Fanout struct {
	queue int
	outs  []*out
}

type out struct {
	name string
	sink Sink
	q    chan *Interval
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	mu        sync.Mutex
	writing   bool // in Write
	delivered uint64
	lost      uint64
	dropped   bool
	reason    string
}

// NewFanout returns a fan-out whose outputs may each fall queue intervals
// behind (DefaultQueue when queue <= 0).
func NewFanout(queue int) *Fanout {
	if queue <= 0 {
		queue = DefaultQueue
	}
	return &Fanout{queue: queue}
}

// Add starts an output named name (as the user gave it, with no secret).
func (f *Fanout) Add(name string, s Sink) {
	ctx, cancel := context.WithCancel(context.Background())
	o := &out{name: name, sink: s, q: make(chan *Interval, f.queue), ctx: ctx, stop: cancel, done: make(chan struct{})}
	f.outs = append(f.outs, o)
	go o.loop()
}

// Len is the number of outputs.
func (f *Fanout) Len() int { return len(f.outs) }

func (o *out) loop() {
	defer close(o.done)
	for iv := range o.q {
		o.mu.Lock()
		dropped := o.dropped
		o.mu.Unlock()
		if dropped {
			continue // counted as lost when it was dropped
		}
		o.mu.Lock()
		o.writing = true
		o.mu.Unlock()
		err := o.sink.Write(o.ctx, iv)
		o.mu.Lock()
		o.writing = false
		switch {
		case o.dropped: // dropped while writing: counted then
		case err == nil:
			o.delivered++
		default:
			o.dropLocked(fmt.Sprintf("failed: %v", err), 1)
		}
		o.mu.Unlock()
	}
}

// drop marks the output dropped for reason (the first one kept), counting
// lost n intervals, those still in its queue and the one it is writing,
// and cancels its Write.
func (o *out) drop(reason string, n uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dropLocked(reason, n)
}

func (o *out) dropLocked(reason string, n uint64) {
	if o.dropped {
		o.lost += n
		return
	}
	o.dropped, o.reason = true, reason
	o.lost += n + uint64(len(o.q))
	if o.writing {
		o.lost++
	}
	o.stop()
}

// Send gives iv to every output still running; it never blocks.
func (f *Fanout) Send(iv *Interval) {
	for _, o := range f.outs {
		o.mu.Lock()
		switch {
		case o.dropped:
			o.lost++
		default:
			select {
			case o.q <- iv:
			default:
				o.dropLocked(fmt.Sprintf("fell %d intervals behind", cap(o.q)), 1)
			}
		}
		o.mu.Unlock()
	}
}

// Close lets every output finish its queue and close, all within timeout
// together; an output still busy then is dropped, its queue counted lost.
// It returns what became of each output, in the order they were added.
func (f *Fanout) Close(timeout time.Duration) []result.Output {
	deadline := time.Now().Add(timeout)
	for _, o := range f.outs {
		close(o.q)
	}
	for _, o := range f.outs {
		select {
		case <-o.done:
			continue
		default:
		}
		select {
		case <-o.done:
		case <-time.After(time.Until(deadline)):
			o.drop(fmt.Sprintf("had not sent everything %s after the run", timeout), 0)
		}
	}
	recs := make([]result.Output, len(f.outs))
	for i, o := range f.outs {
		select {
		case <-o.done:
			// Drained: close it, with a moment even past the deadline
			// (closing a file or an idle exporter takes no time).
			end := deadline
			if min := time.Now().Add(100 * time.Millisecond); end.Before(min) {
				end = min
			}
			ctx, cancel := context.WithDeadline(context.Background(), end)
			closed := make(chan error, 1)
			go func() { closed <- o.sink.Close(ctx) }()
			var err error
			select {
			case err = <-closed:
			case <-ctx.Done():
				err = fmt.Errorf("not closed within %s after the run", timeout)
			}
			cancel()
			if err != nil {
				o.drop(fmt.Sprintf("closing: %v", err), 0)
			}
		default:
			// Still in a Write: it is never closed under it.
		}
		o.stop()
		o.mu.Lock()
		recs[i] = result.Output{Name: o.name, Delivered: o.delivered, Lost: o.lost, Dropped: o.dropped, Reason: o.reason}
		o.mu.Unlock()
	}
	return recs
}
