package metrics

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// phaser lets many writers record into the active bank without locks while
// a reader swaps banks and then waits until no writer is still inside the bank
// it swapped out. It is HdrHistogram's WriterReaderPhaser: writers pay two
// uncontended atomic adds; readers pay the wait.
type phaser struct {
	startEpoch   atomic.Int64
	evenEndEpoch atomic.Int64
	oddEndEpoch  atomic.Int64
}

// enter marks a writer's entry into its critical section and returns the
// value to give to exit.
func (p *phaser) enter() int64 { return p.startEpoch.Add(1) - 1 }

// exit marks the end of the critical section started by enter.
func (p *phaser) exit(v int64) {
	if v < 0 {
		p.oddEndEpoch.Add(1)
	} else {
		p.evenEndEpoch.Add(1)
	}
}

// flip starts a new phase and waits until every writer that entered in the
// previous phase has exited. Readers must not call it concurrently.
func (p *phaser) flip() {
	nextIsEven := p.startEpoch.Load() < 0
	var initial int64
	if nextIsEven {
		p.evenEndEpoch.Store(0)
	} else {
		initial = math.MinInt64
		p.oddEndEpoch.Store(initial)
	}
	startAtFlip := p.startEpoch.Swap(initial)
	for spins := 0; ; spins++ {
		var end int64
		if nextIsEven {
			end = p.oddEndEpoch.Load()
		} else {
			end = p.evenEndEpoch.Load()
		}
		if end == startAtFlip {
			return
		}
		if spins < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}
