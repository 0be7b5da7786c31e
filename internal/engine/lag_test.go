package engine

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestNextPeriod(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		period, lag time.Duration
		changed     bool
		want        time.Duration
	}{
		{"quiet: doubles", 20 * time.Millisecond, 100 * time.Microsecond, false, 40 * time.Millisecond},
		{"quiet: at most slow", 640 * time.Millisecond, 0, false, time.Second},
		{"lagging: fast again", time.Second, lagQuiet, false, lagProbeFast},
		{"users changed: fast again", time.Second, 0, true, lagProbeFast},
	} {
		if got := nextPeriod(tt.period, time.Second, tt.lag, tt.changed); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLagQuantilesWeighted(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	// Unit weights: the sorted sample at index len*99/100, as before.
	var unit []lagSample
	for i := range 250 {
		unit = append(unit, lagSample{time.Duration(i) * ms, 1})
	}
	if p99, mx := lagQuantiles(unit); p99 != 247*ms || mx != 249*ms {
		t.Errorf("unit weights: p99 %v max %v, want 247ms 249ms", p99, mx)
	}
	// Four slow ticks covering quiet seconds (weight 50 each) and three
	// late fast ticks (weight 1 each): 3 of 203 periods lagged, over 1 %,
	// as if 203 fast ticks had been taken.
	if p99, _ := lagQuantiles([]lagSample{{0, 50}, {0, 50}, {50 * ms, 1}, {0, 50}, {30 * ms, 1}, {0, 50}, {40 * ms, 1}}); p99 != 30*ms {
		t.Errorf("3 of 203 periods late: p99 %v, want 30ms", p99)
	}
	// One late fast tick among 200 quiet periods: under 1 %.
	if p99, mx := lagQuantiles([]lagSample{{0, 50}, {0, 50}, {0, 50}, {0, 50}, {25 * ms, 1}}); p99 != 0 || mx != 25*ms {
		t.Errorf("1 of 201 periods late: p99 %v max %v, want 0 25ms", p99, mx)
	}
	if p99, mx := lagQuantiles(nil); p99 != 0 || mx != 0 {
		t.Errorf("no samples: %v %v", p99, mx)
	}
}

// TestLagProbeSlowsDownWhenQuiet: an idle generator's probe ticks about once
// per slow period, not every 20 ms, and its samples still weigh the whole
// time; a change in the number of users makes it tick fast again.
func TestLagProbeSlowsDownWhenQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var users atomic.Int64
		users.Store(10)
		l := newLagProbe(users.Load, 5*time.Second)
		l.start()
		defer l.stop()
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		l.mu.Lock()
		n, weight := len(l.samples), l.usersN
		l.mu.Unlock()
		// 20, 40, ... 640 ms (1.26 s) then every second: 14 ticks in 10 s,
		// weighing the 9.26 s they cover.
		if n != 14 {
			t.Errorf("%d ticks in 10 s of quiet, want 14", n)
		}
		if weight != 463 {
			t.Errorf("ticks weigh %d periods of 20 ms, want 463 (9.26 s)", weight)
		}
		mean, peak := l.takeUsers(10)
		if mean != 10 || peak != 10 {
			t.Errorf("users mean %v peak %d, want 10 10", mean, peak)
		}
		l.take()
		// Users arrive: at its next slow tick (0.26 s later) the probe
		// notices and ticks every 20 ms while the count changes.
		for range 100 {
			users.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		l.mu.Lock()
		n = len(l.samples)
		l.mu.Unlock()
		if n < 35 {
			t.Errorf("%d ticks in 1 s while users arrived, want about 38", n)
		}
		if _, peak := l.takeUsers(users.Load()); peak != 110 {
			t.Errorf("peak %d, want 110", peak)
		}
	})
}
