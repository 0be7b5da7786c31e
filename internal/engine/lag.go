package engine

import (
	"slices"
	"sync"
	"time"
)

// lagProbeEvery is the period of the lag probe.
const lagProbeEvery = 20 * time.Millisecond

// lagProbe measures the generator's scheduling lag: a goroutine that asks to
// sleep lagProbeEvery and records how much later than asked it woke up. A
// generator short of CPU (or stalled by its garbage collector) wakes late,
// and so do its users' timers.
//
// The probe also samples the number of active users at each tick, so an
// interval's user count is a time average, not a reading at its end.
type lagProbe struct {
	mu        sync.Mutex
	samples   []time.Duration // this interval's lags
	users     func() int64
	usersSum  int64
	usersN    int64
	usersPeak int64
	quit      chan struct{}
	wg        sync.WaitGroup
}

func newLagProbe(users func() int64) *lagProbe {
	return &lagProbe{quit: make(chan struct{}), samples: make([]time.Duration, 0, 512), users: users}
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
				u := l.users()
				l.mu.Lock()
				if len(l.samples) < 100_000 {
					l.samples = append(l.samples, max(lag, 0))
				}
				l.usersSum += u
				l.usersN++
				l.usersPeak = max(l.usersPeak, u)
				l.mu.Unlock()
				asked = time.Now()
				t.Reset(lagProbeEvery)
			}
		}
	}()
}

// takeUsers returns the mean and peak number of active users since the last
// take; now is the count at this moment, used when no tick happened.
func (l *lagProbe) takeUsers(now int64) (mean float64, peak int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sum, n, pk := l.usersSum+now, l.usersN+1, max(l.usersPeak, now)
	l.usersSum, l.usersN, l.usersPeak = 0, 0, now
	return float64(sum) / float64(n), pk
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
