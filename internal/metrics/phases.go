package metrics

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// Phases attributes a time of a run (an offset from its start) to one of
// the run's phases: an action counts in the phase of its scheduled start,
// an event (a delivery, a loss) in the phase of its cause, wherever they
// finish. Most phases begin at planned times; a few begin while the run
// goes, when something happens (a count-bound run ramps down when its
// first user is done; the drain begins when the load is over): those are
// begun with Begin, once each, in their order.
//
// Of is exact across Begin: a time t gets the new phase if and only if t is
// at or after the time Begin took. Of is safe for concurrent use, takes no
// lock and does not allocate.
type Phases struct {
	names  []string
	starts []time.Duration // of the planned phases, ascending; starts[0] is ignored (phase 0 holds every time before the next)
	begun  []atomic.Int64  // start of each phase begun at run time: notBegun until Begin, beginning while Begin reads its clock
}

const (
	notBegun  = math.MaxInt64
	beginning = math.MinInt64
)

// NewPhases returns the attribution of a run whose planned phases are
// named planned and begin at starts (ascending; the first phase holds every
// time before the second), followed by phases named later that begin at
// run time (see Begin). A nil *Phases has one phase and attributes every
// time to it.
func NewPhases(planned []string, starts []time.Duration, later ...string) *Phases {
	if len(planned) == 0 || len(starts) != len(planned) {
		panic("metrics: NewPhases needs one start per planned phase, and at least one phase")
	}
	p := &Phases{
		names:  append(append([]string(nil), planned...), later...),
		starts: append([]time.Duration(nil), starts...),
		begun:  make([]atomic.Int64, len(later)),
	}
	for i := range p.begun {
		p.begun[i].Store(notBegun)
	}
	return p
}

// Len is the number of phases, planned and begun at run time.
func (p *Phases) Len() int {
	if p == nil {
		return 1
	}
	return len(p.names)
}

// Name is phase i's name ("" for a nil Phases).
func (p *Phases) Name(i int) string {
	if p == nil {
		return ""
	}
	return p.names[i]
}

// Index returns the index of the phase named name, or -1.
func (p *Phases) Index(name string) int {
	if p == nil {
		return -1
	}
	for i, n := range p.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Begin starts the run-time phase named name at now() and returns that
// time; it returns false when there is no such phase or it has begun
// already. Call it from one goroutine per phase.
func (p *Phases) Begin(name string, now func() time.Duration) (time.Duration, bool) {
	i := p.Index(name) - len(p.starts)
	if i < 0 || p.begun[i].Load() != notBegun {
		return 0, false
	}
	// Readers that find "beginning" wait for the time: every t they
	// attribute was taken before they looked, so a reader that saw
	// notBegun holds a t before the time read below.
	p.begun[i].Store(beginning)
	t := now()
	p.begun[i].Store(int64(t))
	return t, true
}

// Of returns the index of the phase time t belongs to.
func (p *Phases) Of(t time.Duration) int {
	if p == nil {
		return 0
	}
	i := 0
	for k := 1; k < len(p.starts) && t >= p.starts[k]; k++ {
		i = k
	}
	for k := range p.begun {
		v := p.begun[k].Load()
		for v == beginning {
			runtime.Gosched()
			v = p.begun[k].Load()
		}
		if v != notBegun && int64(t) >= v {
			i = len(p.starts) + k
		}
	}
	return i
}
