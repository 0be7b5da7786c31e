package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// Recorder collects the outcomes of actions. Any number of goroutines may
// record at once, without locks and without allocating; one collector at a
// time takes interval snapshots with Collect. Give each event-loop thread (or
// each shard of users) its own Recorder so writers do not share cache lines.
type Recorder struct {
	ph     phaser
	active atomic.Pointer[bank]
	mu     sync.Mutex // serializes collectors; never taken by writers
	spare  *bank      // owned by the collector
}

// bank holds one interval's counters for every action.
type bank struct {
	acts []cells
}

// cells are one action's counters in one bank.
type cells struct {
	count    atomic.Uint64
	dropped  atomic.Uint64
	bytesIn  atomic.Uint64
	bytesOut atomic.Uint64
	errs     [driver.NumClasses]atomic.Uint64
	msgs     [driver.NumClasses]atomic.Pointer[string]
	latency  atomicHist
	service  atomicHist
}

// atomicHist is a histogram that many writers update with atomic adds.
type atomicHist struct {
	counts [NumBuckets]atomic.Uint64
	sum    atomic.Uint64
	max    atomic.Uint64
	min    atomic.Uint64 // stored as value+1 so that 0 means "none yet"
}

func (h *atomicHist) record(v uint64) {
	if v > MaxValue {
		v = MaxValue
	}
	h.counts[Index(v)].Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && v+1 >= m) || h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
}

// drainInto adds the histogram to dst and zeroes it. Only for a bank that no
// writer can reach (after a phaser flip).
func (h *atomicHist) drainInto(dst *Hist) {
	var got Hist
	for i := range h.counts {
		if c := h.counts[i].Load(); c != 0 {
			got.b = append(got.b, Bucket{Index: uint32(i), Count: c})
			got.N += c
			h.counts[i].Store(0)
		}
	}
	if got.N == 0 {
		return
	}
	got.Min = h.min.Load() - 1
	got.Max = h.max.Load()
	got.Sum = h.sum.Load()
	h.sum.Store(0)
	h.max.Store(0)
	h.min.Store(0)
	dst.Merge(&got)
}

// NewRecorder returns a recorder for actions numbered 0..actions-1.
func NewRecorder(actions int) *Recorder {
	r := &Recorder{spare: &bank{acts: make([]cells, actions)}}
	r.active.Store(&bank{acts: make([]cells, actions)})
	return r
}

// Record adds one finished action: latency is measured from the action's
// scheduled start, service from the moment it was actually started; in and
// out are bytes received and sent; class is driver.OK or the error class.
// err, when not nil, may be kept as the class's sample message.
func (r *Recorder) Record(action int, latency, service time.Duration, in, out int64, class driver.Class, err error) {
	v := r.ph.enter()
	c := &r.active.Load().acts[action]
	c.count.Add(1)
	if in > 0 {
		c.bytesIn.Add(uint64(in))
	}
	if out > 0 {
		c.bytesOut.Add(uint64(out))
	}
	c.latency.record(Micros(latency))
	c.service.record(Micros(service))
	if class != driver.OK {
		c.errs[class].Add(1)
		if err != nil && c.msgs[class].Load() == nil {
			msg := err.Error()
			c.msgs[class].CompareAndSwap(nil, &msg)
		}
	}
	r.ph.exit(v)
}

// RecordUntimed counts a finished action that has no latency: a message
// found lost, an action that was skipped. It counts in its class only.
func (r *Recorder) RecordUntimed(action int, class driver.Class, err error) {
	v := r.ph.enter()
	c := &r.active.Load().acts[action]
	c.count.Add(1)
	if class != driver.OK {
		c.errs[class].Add(1)
		if err != nil && c.msgs[class].Load() == nil {
			msg := err.Error()
			c.msgs[class].CompareAndSwap(nil, &msg)
		}
	}
	r.ph.exit(v)
}

// RecordDropped counts an arrival of the action that was dropped because it
// could not start within its bound. It is not an action: no latency.
func (r *Recorder) RecordDropped(action int) {
	v := r.ph.enter()
	r.active.Load().acts[action].dropped.Add(1)
	r.ph.exit(v)
}

// ActionSnapshot is what one action did during one interval.
type ActionSnapshot struct {
	Count    uint64 // finished actions, successful or not
	Dropped  uint64 // arrivals dropped before they started
	BytesIn  uint64
	BytesOut uint64
	Errors   [driver.NumClasses]uint64 // by class; Errors[driver.OK] is unused
	Messages [driver.NumClasses]string // one sample message per error class
	Latency  Hist                      // from the scheduled start, µs
	Service  Hist                      // from the actual start, µs
}

// ErrorCount returns the number of failed actions (skipped ones are not
// failures).
func (a *ActionSnapshot) ErrorCount() uint64 {
	var n uint64
	for c := driver.Class(1); c < driver.NumClasses; c++ {
		if c != driver.Skipped {
			n += a.Errors[c]
		}
	}
	return n
}

// Merge adds o to a, exactly.
func (a *ActionSnapshot) Merge(o *ActionSnapshot) {
	a.Count += o.Count
	a.Dropped += o.Dropped
	a.BytesIn += o.BytesIn
	a.BytesOut += o.BytesOut
	for i := range a.Errors {
		a.Errors[i] += o.Errors[i]
		if a.Messages[i] == "" {
			a.Messages[i] = o.Messages[i]
		}
	}
	a.Latency.Merge(&o.Latency)
	a.Service.Merge(&o.Service)
}

// Collect ends the recorder's current interval: everything recorded since
// the previous Collect is added to dst (one entry per action) and the
// recorder starts afresh. It waits only for writers that are inside Record.
func (r *Recorder) Collect(dst []ActionSnapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.active.Swap(r.spare)
	r.ph.flip()
	for i := range old.acts {
		c, d := &old.acts[i], &dst[i]
		d.Count += c.count.Swap(0)
		d.Dropped += c.dropped.Swap(0)
		d.BytesIn += c.bytesIn.Swap(0)
		d.BytesOut += c.bytesOut.Swap(0)
		for k := range c.errs {
			d.Errors[k] += c.errs[k].Swap(0)
			if m := c.msgs[k].Swap(nil); m != nil && d.Messages[k] == "" {
				d.Messages[k] = *m
			}
		}
		c.latency.drainInto(&d.Latency)
		c.service.drainInto(&d.Service)
	}
	r.spare = old
}
