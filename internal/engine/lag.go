package engine

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// The lag probe's period adapts. It is lagProbeFast while the generator lags
// (a tick at least lagQuiet late) or its number of active users changes,
// and doubles after each quiet tick up to the slow period (lagProbeSlow, at
// most a fifth of the interval). Each tick costs the process a few thread
// wake-ups (about 0.2 ms of CPU on a small VM): a fixed 20 ms probe alone
// kept an idle generator at about 1 % of a core.
const (
	lagProbeFast = 20 * time.Millisecond
	lagProbeSlow = time.Second
	lagQuiet     = 2 * time.Millisecond
)

// lagProbe measures the generator's scheduling lag: a goroutine that asks to
// sleep one period and records how much later than asked it woke up. A
// generator short of CPU (or stalled by its garbage collector) wakes late,
// and so do its users' timers.
//
// The probe also samples the number of active users at each tick, so an
// interval's user count is a time average, not a reading at its end.
//
// Every sample is weighted by the period it ended (in lagProbeFast units),
// so the lag's p99 and the mean user count are time averages, as if the
// probe had ticked every lagProbeFast.
type lagProbe struct {
	mu        sync.Mutex
	samples   []lagSample // this interval's lags
	users     func() int64
	usersSum  int64 // active users times weight
	usersN    int64 // weights
	usersPeak int64
	slow      time.Duration
	gov       *procsGovernor // nil: GOMAXPROCS is left alone
	quit      chan struct{}
	wg        sync.WaitGroup
}

// lagSample is one tick's lag and the number of lagProbeFast periods it
// stands for.
type lagSample struct {
	lag    time.Duration
	weight int64
}

// newLagProbe returns a probe for a run cut every interval.
func newLagProbe(users func() int64, interval time.Duration) *lagProbe {
	slow := lagProbeSlow
	if interval > 0 {
		slow = max(lagProbeFast, min(slow, interval/5))
	}
	return &lagProbe{quit: make(chan struct{}), samples: make([]lagSample, 0, 512), users: users, slow: slow}
}

// nextPeriod is the probe's period after a tick that came lag late, and
// whether the number of active users changed since the tick before.
func nextPeriod(period, slow, lag time.Duration, usersChanged bool) time.Duration {
	if lag >= lagQuiet || usersChanged {
		return lagProbeFast
	}
	return min(2*period, slow)
}

func (l *lagProbe) start() {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		period := lagProbeFast
		t := time.NewTimer(period)
		defer t.Stop()
		asked := time.Now()
		last := l.users()
		if l.gov != nil {
			l.gov.start(asked)
		}
		for {
			select {
			case <-l.quit:
				return
			case now := <-t.C:
				lag := max(now.Sub(asked)-period, 0)
				u := l.users()
				w := int64(period / lagProbeFast)
				l.mu.Lock()
				if len(l.samples) < 100_000 {
					l.samples = append(l.samples, lagSample{lag, w})
				}
				l.usersSum += u * w
				l.usersN += w
				l.usersPeak = max(l.usersPeak, u)
				l.mu.Unlock()
				if l.gov != nil {
					l.gov.tick(now, lag, u != last)
				}
				period = nextPeriod(period, l.slow, lag, u != last)
				last = u
				asked = time.Now()
				t.Reset(period)
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

// take returns the (weighted) 99th percentile and the maximum lag since the
// last take.
func (l *lagProbe) take() (p99, mx time.Duration) {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.samples = l.samples[:0]
	l.mu.Unlock()
	return lagQuantiles(s)
}

// lagQuantiles returns the weighted 99th percentile and the maximum of s
// (which it sorts): with unit weights, the sorted sample at index
// len*99/100.
func lagQuantiles(s []lagSample) (p99, mx time.Duration) {
	if len(s) == 0 {
		return 0, 0
	}
	slices.SortFunc(s, func(a, b lagSample) int { return cmp.Compare(a.lag, b.lag) })
	var total int64
	for _, x := range s {
		total += x.weight
	}
	below, cum := total*99/100, int64(0)
	for _, x := range s {
		cum += x.weight
		if cum > below {
			return x.lag, s[len(s)-1].lag
		}
	}
	return s[len(s)-1].lag, s[len(s)-1].lag
}

func (l *lagProbe) stop() {
	close(l.quit)
	l.wg.Wait()
	if l.gov != nil {
		l.gov.stop()
	}
}
