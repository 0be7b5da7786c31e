package engine

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// clockSource is a counter growing by 10 per second of the run's clock, and
// a gauge; it fails between 2 s and 3 s.
type clockSource struct{ start time.Time }

func (c *clockSource) Name() string { return "system" }
func (c *clockSource) Sample(ctx context.Context, emit func(sampler.Point)) error {
	el := time.Since(c.start)
	if el >= 2*time.Second && el < 3*time.Second {
		return errors.New("exporter down")
	}
	emit(sampler.Point{Name: "context_switches_total", Kind: sampler.Counter, Value: 10 * el.Seconds()})
	emit(sampler.Point{Name: "memory_used_bytes", Kind: sampler.Gauge, Value: 42})
	return nil
}

func TestCountersAlignedWithIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 1\ninterval: 1s\nphases: {steady: 4s}\nclosed: {think: 100ms}\nactions: [{name: a}]\n")
		src := &clockSource{start: time.Now()}
		out, err := Run(context.Background(), Config{Plan: p, Driver: &sleepDriver{}, Actions: []driver.Action{"a"},
			Kind: scenario.EngineGoroutines, Counters: sampler.New(time.Second, src)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Intervals) != 4 {
			t.Fatalf("%d intervals", len(out.Intervals))
		}
		for i, iv := range out.Intervals {
			if len(iv.Counters) != 1 {
				t.Fatalf("interval %d: %d sources", i, len(iv.Counters))
			}
			c := iv.Counters[0]
			// Down at the reading taken at 2 s (the end of interval 1) and so
			// interval 2 has no earlier reading to take a rate from.
			wantUp := i != 1 && i != 2
			if c.Up != wantUp {
				t.Errorf("interval %d: up=%v (%s), want %v", i, c.Up, c.Err, wantUp)
				continue
			}
			if c.Up && (math.Abs(c.Values["context_switches_total"]-10) > 1e-6 || c.Values["memory_used_bytes"] != 42) {
				t.Errorf("interval %d: %v", i, c.Values)
			}
		}
	})
}
