package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// The settle's constants: the server's CPU is sampled every settleTick;
// it has settled when its rate over the last settleWindow is below
// max(settleFloor cores, settleFactor × its idle rate); the idle rate is
// measured over settleIdle before the first step; a settle gives up after
// max(2 × the step's length, settleMinLimit).
const (
	settleTick     = 250 * time.Millisecond
	settleWindow   = time.Second
	settleIdle     = 2 * time.Second
	settleFloor    = 0.05
	settleFactor   = 1.5
	settleMinLimit = 30 * time.Second
)

// settleLimit is how long a settle after steps of length step may last.
func settleLimit(step time.Duration) time.Duration {
	return max(2*step, settleMinLimit)
}

// settler waits, between the steps of a capacity search, for a measured
// server (the scenario's counters.processes) to settle: a stateful server
// (a mail queue, a write-back cache) may keep working on one step's
// backlog after its load stopped, and the next step would measure that
// backlog, not its own load.
//
// Contract: idle measures the server's CPU (user+system, summed over the
// processes and their descendants, sampler.NewProcess) over settleIdle
// before the first step. wait then samples it every settleTick and
// returns once its rate over the last settleWindow is below
// max(settleFloor, settleFactor × idle) cores, or after limit (TimedOut);
// it lasts at least settleWindow. A server that cannot be read (not
// running) ends the wait at once, Why saying so. No server measured: no
// settler (newSettler returns nil).
type settler struct {
	srcs []sampler.Source
	idle float64 // cores
}

// newSettler is the settler of the server processes procs (their
// counters.processes selectors); nil when there are none.
func newSettler(procs []string) (*settler, error) {
	if len(procs) == 0 {
		return nil, nil
	}
	st := &settler{}
	for _, p := range procs {
		src, err := sampler.NewProcess(processSelector(p))
		if err != nil {
			return nil, err
		}
		st.srcs = append(st.srcs, src)
	}
	return st, nil
}

// cpu is the server's CPU seconds so far.
func (st *settler) cpu(ctx context.Context) (float64, error) {
	var sum float64
	for _, src := range st.srcs {
		err := src.Sample(ctx, func(p sampler.Point) {
			if p.Name == "process_cpu_user_seconds_total" || p.Name == "process_cpu_system_seconds_total" {
				sum += p.Value
			}
		})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", src.Name(), err)
		}
	}
	return sum, nil
}

// measureIdle sets the idle rate from d of samples; an unreadable server
// leaves it 0 (the floor then decides).
func (st *settler) measureIdle(ctx context.Context, d time.Duration) error {
	c0, err := st.cpu(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	c1, err := st.cpu(ctx)
	if err != nil {
		return err
	}
	st.idle = (c1 - c0) / time.Since(t0).Seconds()
	return nil
}

// threshold is the rate, in cores, under which the server has settled.
func (st *settler) threshold() float64 {
	return math.Max(settleFloor, settleFactor*st.idle)
}

// wait waits for the server to settle, up to limit, and says how it went.
func (st *settler) wait(ctx context.Context, limit time.Duration) capacity.RecordSettle {
	type sample struct {
		at  time.Time
		cpu float64
	}
	start := time.Now()
	out := capacity.RecordSettle{IdleCPU: st.idle, Threshold: st.threshold(), LimitS: limit.Seconds(), CPU: result.Num(math.NaN())}
	done := func(why string) capacity.RecordSettle {
		out.ElapsedS = time.Since(start).Seconds()
		out.Why = why
		return out
	}
	var hist []sample
	tick := time.NewTicker(settleTick)
	defer tick.Stop()
	for {
		c, err := st.cpu(ctx)
		if err != nil {
			return done(fmt.Sprintf("the server could not be read (%v): not waited for", err))
		}
		now := time.Now()
		hist = append(hist, sample{now, c})
		// The oldest sample at least a window old.
		i := -1
		for j := range hist {
			if now.Sub(hist[j].at) >= settleWindow {
				i = j
			}
		}
		if i >= 0 {
			hist = hist[i:]
			rate := (c - hist[0].cpu) / now.Sub(hist[0].at).Seconds()
			out.CPU = result.Num(rate)
			if rate < out.Threshold {
				return done(fmt.Sprintf("the server settled in %s: %.3f cores over the last second, under %.3f (idle %.3f)",
					time.Since(start).Round(time.Millisecond), rate, out.Threshold, st.idle))
			}
		}
		if time.Since(start) >= limit {
			out.TimedOut = true
			return done(fmt.Sprintf("the server had not settled after %s (the limit): %.3f cores over the last second, not under %.3f (idle %.3f); the next step may measure this step's backlog",
				limit, float64(out.CPU), out.Threshold, st.idle))
		}
		select {
		case <-ctx.Done():
			return done("the search ended while waiting for the server to settle")
		case <-tick.C:
		}
	}
}
