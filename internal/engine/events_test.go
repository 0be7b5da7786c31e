package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// echoDriver: every "publish" action is delivered 300 ms later as an event
// "deliver", except every tenth, which is lost (found out at the drain).
type echoDriver struct {
	sleepDriver
	mu      sync.Mutex
	sink    driver.Sink
	pending sync.WaitGroup
	sent    int
	lost    int
	drained time.Duration
}

func (d *echoDriver) EventActions() []string { return []string{"deliver"} }
func (d *echoDriver) Observe(s driver.Sink)  { d.sink = s }
func (d *echoDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	return &echoSession{d: d}, nil
}
func (d *echoDriver) Drain(ctx context.Context) error {
	t0 := time.Now()
	d.pending.Wait()
	d.drained = time.Since(t0)
	for i := 0; i < d.lost; i++ {
		d.sink.Event(0, time.Time{}, -1, 0, 0, driver.Lost, nil)
	}
	return nil
}

type echoSession struct{ d *echoDriver }

func (s *echoSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	d := s.d
	d.mu.Lock()
	d.sent++
	lost := d.sent%10 == 0
	if lost {
		d.lost++
	}
	d.mu.Unlock()
	if !lost {
		d.pending.Add(1)
		sent := time.Now()
		time.AfterFunc(300*time.Millisecond, func() {
			d.sink.Event(0, sent, time.Since(sent), 100, 0, driver.OK, nil)
			d.pending.Done()
		})
	}
	return driver.Outcome{BytesOut: 100}, nil
}
func (s *echoSession) Close() error { return nil }

func TestEventsAndDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\nmodel: open\nopen: {rate: 100/s, arrivals: uniform}\nphases: {steady: 2s}\nactions: [{name: publish}]\n")
		d := &echoDriver{}
		out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: []driver.Action{"publish"}, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
		sums := result.Summarize([]string{"publish", "deliver"}, 1, out.Intervals)
		all := result.Find(sums, result.All)
		pub, del := all.Actions[0], all.Actions[1]
		if pub.Count != 200 || del.Count != 200 || del.ErrorsByClass["lost"] != 20 || del.OK != 180 {
			t.Errorf("published %d, delivered %d (lost %d, ok %d)", pub.Count, del.Count, del.ErrorsByClass["lost"], del.OK)
		}
		// The total is the users' actions: the deliveries are events.
		if all.Total.Count != 200 || all.Total.Errors != 0 || all.Total.Latency.MaxMs >= 300 {
			t.Errorf("total %d actions, %d errors, max %v ms: want the 200 publishes alone", all.Total.Count, all.Total.Errors, all.Total.Latency.MaxMs)
		}
		if del.Latency.P50Ms != 300 || del.Latency.MinMs != 300 {
			t.Errorf("delivery latency %+v, want 300 ms", del.Latency)
		}
		// The last deliveries arrive in the drain phase: the last message was
		// sent at 1.99 s, the load ended at 2 s, and it arrived at 2.29 s.
		dr := result.Find(sums, "drain")
		if dr == nil || dr.Actions[1].Count == 0 || out.Drain != 290*time.Millisecond {
			t.Errorf("drain phase %+v, drain %v", dr, out.Drain)
		}
	})
}
