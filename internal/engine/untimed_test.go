package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// checkDriver: every action takes 10 ms, then checks what it did for 30
// ms more (like files' upload read-back), recorded as its own event
// "verify" before Do returns, and reported as Do's untimed work.
type checkDriver struct {
	sleepDriver
	sink      driver.Sink
	immediate bool
	drains    int
}

func (d *checkDriver) EventActions() []string { return []string{"verify"} }
func (d *checkDriver) Observe(s driver.Sink)  { d.sink = s }
func (d *checkDriver) EventsImmediate() bool  { return d.immediate }
func (d *checkDriver) Drain(context.Context) error {
	d.drains++
	return nil
}
func (d *checkDriver) Open(context.Context, driver.User) (driver.Session, error) {
	return &checkSession{d: d}, nil
}

type checkSession struct{ d *checkDriver }

func (s *checkSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	start := time.Now()
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	time.Sleep(30 * time.Millisecond)
	s.d.sink.Event(0, start, time.Since(t0), 100, 0, driver.OK, nil)
	return driver.Outcome{BytesOut: 100, Untimed: time.Since(t0)}, nil
}

func (s *checkSession) Close() error { return nil }

// Do's untimed work is not in the action's latency: 10 ms, not 40; it is
// the event's own (30 ms). The user is busy until Do returns (5 actions:
// 200 ms). A driver whose events are immediate is not drained.
func TestUntimedWorkAfterTheAction(t *testing.T) {
	for _, immediate := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			p := compile(t, "users: 1\nclosed: {iterations: 5}\nactions: [{name: a}]\n")
			d := &checkDriver{immediate: immediate}
			out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: []driver.Action{"a"}, Kind: scenario.EngineGoroutines})
			if err != nil {
				t.Fatal(err)
			}
			sums := result.Summarize([]string{"a", "verify"}, 1, out.Intervals)
			all := result.Find(sums, result.All)
			a, v := all.Actions[0], all.Actions[1]
			if a.Count != 5 || a.Latency.MaxMs != 10 || a.Latency.P50Ms != 10 || a.Service.MaxMs != 10 {
				t.Errorf("immediate %v: the action: %d, latency %+v, service %+v; want 10 ms", immediate, a.Count, a.Latency, a.Service)
			}
			if v.Count != 5 || v.Latency.P50Ms != 30 || v.Latency.MaxMs != 30 {
				t.Errorf("immediate %v: the check: %d, latency %+v; want 30 ms", immediate, v.Count, v.Latency)
			}
			if out.Elapsed < 200*time.Millisecond {
				t.Errorf("immediate %v: elapsed %v: the user was busy 40 ms per action", immediate, out.Elapsed)
			}
			if (d.drains == 0) != immediate || (immediate && result.Find(sums, "drain") != nil) {
				t.Errorf("immediate %v: Drain called %d times, phases %d", immediate, d.drains, len(sums))
			}
		})
	}
}
