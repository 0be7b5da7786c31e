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
//
// Every outcome is counted in a phase of the run (see Phases): an action in
// the phase of its scheduled start, an event in the phase of its cause, so
// that a phase's figures are those of the work it started, whenever that
// work ended.
type Recorder struct {
	ph      phaser
	phases  *Phases
	actions int
	active  atomic.Pointer[bank]
	mu      sync.Mutex // serializes collectors; never taken by writers
	spare   *bank      // owned by the collector
}

// bank holds one interval's counters for every phase and action.
type bank struct {
	acts []cells // phase*actions + action
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

// atomicHist is a histogram that many writers update with atomic adds. Its
// counts come in groups of subBucketHalf buckets (one power of two of
// values), each made the first time a value falls in it and kept when the
// bank is emptied: a histogram costs the groups its values span (a few KiB),
// and a bank in use allocates nothing.
type atomicHist struct {
	groups [NumBuckets / subBucketHalf]atomic.Pointer[countGroup]
	sum    atomic.Uint64
	max    atomic.Uint64
	min    atomic.Uint64 // stored as value+1 so that 0 means "none yet"
}

type countGroup [subBucketHalf]atomic.Uint64

func (h *atomicHist) record(v uint64) {
	if v > MaxValue {
		v = MaxValue
	}
	i := Index(v)
	g := h.groups[i/subBucketHalf].Load()
	if g == nil {
		g = h.grow(i / subBucketHalf)
	}
	g[i%subBucketHalf].Add(1)
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

// grow makes group k, once: writers that race agree on the first one made.
func (h *atomicHist) grow(k int) *countGroup {
	g := new(countGroup)
	if h.groups[k].CompareAndSwap(nil, g) {
		return g
	}
	return h.groups[k].Load()
}

// drainInto adds the histogram to dst and zeroes it. Only for a bank that no
// writer can reach (after a phaser flip).
func (h *atomicHist) drainInto(dst *Hist) {
	var got Hist
	for k := range h.groups {
		g := h.groups[k].Load()
		if g == nil {
			continue
		}
		for j := range g {
			if c := g[j].Load(); c != 0 {
				got.b = append(got.b, Bucket{Index: uint32(k*subBucketHalf + j), Count: c})
				got.N += c
				g[j].Store(0)
			}
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

// NewRecorder returns a recorder for actions numbered 0..actions-1 in the
// phases of phases (nil: one phase).
func NewRecorder(actions int, phases *Phases) *Recorder {
	n := actions * phases.Len()
	r := &Recorder{phases: phases, actions: actions, spare: &bank{acts: make([]cells, n)}}
	r.active.Store(&bank{acts: make([]cells, n)})
	return r
}

// Phases is the recorder's attribution (nil: one phase).
func (r *Recorder) Phases() *Phases { return r.phases }

// cell returns the cells of action in the phase of time at, in b.
func (r *Recorder) cell(b *bank, action int, at time.Duration) *cells {
	return &b.acts[r.phases.Of(at)*r.actions+action]
}

// Record adds one finished action scheduled at sched (an offset of the
// run's clock: it counts in that time's phase): latency is measured from
// the scheduled start, service from the moment it was actually started; in
// and out are bytes received and sent; class is driver.OK or the error
// class. err, when not nil, may be kept as the class's sample message.
//
// An action of class driver.Skipped was not attempted: it is counted in
// that class alone, apart from the finished actions (not in their count,
// their histograms nor their bytes).
func (r *Recorder) Record(action int, sched, latency, service time.Duration, in, out int64, class driver.Class, err error) {
	v := r.ph.enter()
	c := r.cell(r.active.Load(), action, sched)
	if class == driver.Skipped {
		c.skip(err)
		r.ph.exit(v)
		return
	}
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

// RecordUntimed counts a finished action that has no latency (a message
// found lost, an action that was skipped), in the phase of time at (its
// scheduled start, or its cause). It counts in its class only.
func (r *Recorder) RecordUntimed(action int, at time.Duration, class driver.Class, err error) {
	v := r.ph.enter()
	c := r.cell(r.active.Load(), action, at)
	if class == driver.Skipped {
		c.skip(err)
		r.ph.exit(v)
		return
	}
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

// skip counts an action that was not attempted (see Record).
func (c *cells) skip(err error) {
	c.errs[driver.Skipped].Add(1)
	if err != nil && c.msgs[driver.Skipped].Load() == nil {
		msg := err.Error()
		c.msgs[driver.Skipped].CompareAndSwap(nil, &msg)
	}
}

// RecordDropped counts an arrival of the action, due at at, that was
// dropped because it could not start within its bound. It is not an
// action: no latency.
func (r *Recorder) RecordDropped(action int, at time.Duration) {
	v := r.ph.enter()
	r.cell(r.active.Load(), action, at).dropped.Add(1)
	r.ph.exit(v)
}

// ActionSnapshot is what one action did during one interval.
type ActionSnapshot struct {
	Count    uint64 // finished actions, successful or not (not the skipped: Errors[driver.Skipped])
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
// the previous Collect is added to dst, by phase then action
// (dst[phase][action], Phases().Len() phases of the recorder's actions),
// and the recorder starts afresh. It waits only for writers that are inside
// Record.
func (r *Recorder) Collect(dst [][]ActionSnapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.active.Swap(r.spare)
	r.ph.flip()
	for i := range old.acts {
		c, d := &old.acts[i], &dst[i/r.actions][i%r.actions]
		if c.count.Load() == 0 && c.dropped.Load() == 0 && c.errs[driver.Skipped].Load() == 0 {
			continue // nothing recorded: every counter is zero (a record counts, drops or skips)
		}
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

// Snapshots returns an empty dst for Collect.
func (r *Recorder) Snapshots() [][]ActionSnapshot {
	out := make([][]ActionSnapshot, r.phases.Len())
	for i := range out {
		out[i] = make([]ActionSnapshot, r.actions)
	}
	return out
}
