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
// "deliver", except every tenth, which is lost (found out at the drain, and
// given its send time as its cause unless noCause). late more events with
// no cause (recorded at the drain: they count in it).
type echoDriver struct {
	sleepDriver
	mu      sync.Mutex
	sink    driver.Sink
	pending sync.WaitGroup
	sent    int
	lost    []time.Time // send times of the lost messages
	noCause bool
	late    int
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
	for _, at := range d.lost {
		if d.noCause {
			at = time.Time{}
		}
		d.sink.Event(0, at, -1, 0, 0, driver.Lost, nil)
	}
	for range d.late {
		d.sink.Event(0, time.Time{}, time.Millisecond, 0, 0, driver.OK, nil)
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
		d.lost = append(d.lost, time.Now())
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
		// The last deliveries arrive in the drain (the last message was sent
		// at 1.99 s, the drain began at the plan's end, 2 s, and the message
		// arrived at 2.29 s), and
		// the lost ones are found there; all count in the phase they were
		// sent in, so the drain has no summary of its own.
		if st := result.Find(sums, "steady"); st == nil || st.Actions[1].Count != 200 || st.Actions[1].ErrorsByClass["lost"] != 20 {
			t.Errorf("steady phase %+v", st)
		}
		if dr := result.Find(sums, "drain"); dr != nil || out.Drain <= 250*time.Millisecond || out.Drain > 300*time.Millisecond {
			t.Errorf("drain phase %+v, drain %v", dr, out.Drain)
		}
		var drainIvs int
		for _, iv := range out.Intervals {
			if iv.Phase == "drain" {
				drainIvs++
			}
		}
		if drainIvs == 0 {
			t.Error("no interval spans the drain")
		}
	})
}

// An event its driver gives no cause counts when it is recorded: found in
// the drain, it counts in the drain, which then has a summary.
func TestEventsWithoutACauseCountInTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\nmodel: open\nopen: {rate: 100/s, arrivals: uniform}\nphases: {steady: 1s}\nactions: [{name: publish}]\n")
		d := &echoDriver{noCause: true, late: 3}
		out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: []driver.Action{"publish"}, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
		sums := result.Summarize([]string{"publish", "deliver"}, 1, out.Intervals)
		st, dr := result.Find(sums, "steady"), result.Find(sums, "drain")
		if dr == nil || dr.Actions[1].Count != 13 || dr.Actions[1].ErrorsByClass["lost"] != 10 || dr.Actions[0].Count != 0 {
			t.Fatalf("drain %+v", dr)
		}
		if st.Actions[1].Count != 90 || st.Actions[1].Errors != 0 || st.Actions[0].Count != 100 {
			t.Errorf("steady: %d published, %d delivered (%d errors)", st.Actions[0].Count, st.Actions[1].Count, st.Actions[1].Errors)
		}
	})
}
