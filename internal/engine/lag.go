package engine

import (
	"slices"
	"sync"
	"time"
)

// lagProbeEvery is the period of the lag probe.
const lagProbeEvery = 5 * time.Millisecond

// lagProbe measures the generator's scheduling lag: a goroutine that asks to
// sleep lagProbeEvery and records how much later than asked it woke up. A
// generator short of CPU (or stalled by its garbage collector) wakes late,
// and so do its users' timers.
type lagProbe struct {
	mu      sync.Mutex
	samples []time.Duration // this interval's lags
	quit    chan struct{}
	wg      sync.WaitGroup
}

func newLagProbe() *lagProbe {
	return &lagProbe{quit: make(chan struct{}), samples: make([]time.Duration, 0, 512)}
}

func (l *lagProbe) start() {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTimer(lagProbeEvery)
		defer t.Stop()
		asked := time.Now()
		for {
			select {
			case <-l.quit:
				return
			case now := <-t.C:
				lag := now.Sub(asked) - lagProbeEvery
				l.mu.Lock()
				if len(l.samples) < 100_000 {
					l.samples = append(l.samples, max(lag, 0))
				}
				l.mu.Unlock()
				asked = time.Now()
				t.Reset(lagProbeEvery)
			}
		}
	}()
}

// take returns the 99th percentile and the maximum lag since the last take.
func (l *lagProbe) take() (p99, mx time.Duration) {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.samples = l.samples[:0]
	l.mu.Unlock()
	if len(s) == 0 {
		return 0, 0
	}
	slices.Sort(s)
	return s[(len(s)*99)/100], s[len(s)-1]
}

func (l *lagProbe) stop() {
	close(l.quit)
	l.wg.Wait()
}
