package engine

import (
	"runtime"
	"sync"
	"time"
)

// procsGovernor gives the Go scheduler one processor (GOMAXPROCS 1) while
// the generator is steady and nearly idle, and all of them back at the first
// sign of work. A mostly idle generator (thousands of mail users acting a
// few times an hour) wakes from idle at nearly every network exchange; with
// more than one processor each wake-up also wakes a second thread to look
// for work, which finds none. Measured on a 2-core VM, alternated: 10,000
// loadsim-online users 1.11 / 1.00 % of a core with two processors, 0.95 /
// 0.85 % with one; 4 SMTP senders back to back 13-22 % less CPU and 40 %
// fewer context switches.
//
// It is driven by the lag probe's ticks (20 ms while anything moves, up to
// a second when quiet). One processor is given when, for procsQuietFor, the
// generator used less than procsLowCPU cores, no tick was late and the
// number of active users did not change. All are given back at the first
// tick that is late (procsLate), sees the users change (log-on storms, ramp
// steps), or sees the generator use procsHighCPU cores or more since the
// tick before. The figures are the process's CPU time (user and system).
//
// Only the goroutine executor uses it (the event loops size GOMAXPROCS
// themselves), and only when the user did not pin GOMAXPROCS; see
// Config.AutoProcs.
type procsGovernor struct {
	full int                  // GOMAXPROCS when the run started
	set  func(int)            // runtime.GOMAXPROCS in a run; a recorder in tests
	cpu  func() time.Duration // the process's CPU time

	// Touched by the probe's goroutine only (cur is written under mu).
	cur        int
	lastAt     time.Time
	lastCPU    time.Duration
	quietSince time.Time // zero: not in a quiet window
	quietCPU   time.Duration

	mu     sync.Mutex
	fewest int // fewest processors since the last take
}

// The governor's thresholds (variables so that tests can shorten them).
var (
	procsQuietFor = 2 * time.Second
	procsLate     = lagQuiet // a tick this late means work is waiting
)

const (
	procsLowCPU  = 0.25 // cores, over the quiet window
	procsHighCPU = 0.6  // cores, since the tick before
)

// newProcsGovernor returns a governor for a process that now runs on full
// processors, or nil when there is nothing to govern (one processor).
func newProcsGovernor(full int, set func(int), cpu func() time.Duration) *procsGovernor {
	if full <= 1 {
		return nil
	}
	return &procsGovernor{full: full, set: set, cpu: cpu, cur: full, fewest: full}
}

// start takes the first reading.
func (g *procsGovernor) start(now time.Time) {
	g.lastAt, g.lastCPU = now, g.cpu()
}

// tick takes one reading of the lag probe: the tick at now came lag late
// and the active users changed (or not) since the tick before.
func (g *procsGovernor) tick(now time.Time, lag time.Duration, usersChanged bool) {
	cpu := g.cpu()
	span := now.Sub(g.lastAt)
	used := cpu - g.lastCPU
	g.lastAt, g.lastCPU = now, cpu
	busy := lag >= procsLate || usersChanged ||
		(span > 0 && used.Seconds() >= procsHighCPU*span.Seconds())
	switch {
	case busy:
		g.quietSince = time.Time{}
		g.apply(g.full)
	case g.cur != g.full:
		// Quiet, and already on one processor.
	case g.quietSince.IsZero():
		g.quietSince, g.quietCPU = now, cpu
	case now.Sub(g.quietSince) >= procsQuietFor:
		if w := now.Sub(g.quietSince); (cpu - g.quietCPU).Seconds() < procsLowCPU*w.Seconds() {
			g.apply(1)
		}
		g.quietSince, g.quietCPU = now, cpu
	}
}

func (g *procsGovernor) apply(n int) {
	if n == g.cur {
		return
	}
	g.set(n)
	g.mu.Lock()
	g.cur = n
	g.fewest = min(g.fewest, n)
	g.mu.Unlock()
}

// take returns the fewest processors the scheduler had since the last take.
func (g *procsGovernor) take() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.fewest
	g.fewest = g.cur
	return n
}

// stop gives every processor back; the probe's goroutine has ended.
func (g *procsGovernor) stop() { g.apply(g.full) }

// setProcs is the governor's setter in a run.
func setProcs(n int) { runtime.GOMAXPROCS(n) }
