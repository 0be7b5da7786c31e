package metrics

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// Many writers record while a collector takes snapshots all the time: the
// snapshots must add up to exactly what was recorded, nothing lost or
// counted twice.
func TestRecorderConcurrentCollectIsExact(t *testing.T) {
	t.Parallel()
	const writers, each = 8, 20_000
	r := NewRecorder(2)
	var total [2]ActionSnapshot
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		snap := make([]ActionSnapshot, 2)
		for !stop.Load() {
			for i := range snap {
				snap[i] = ActionSnapshot{}
			}
			r.Collect(snap)
			for i := range snap {
				total[i].Merge(&snap[i])
			}
		}
	}()
	var wg sync.WaitGroup
	boom := errors.New("boom")
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				a := i % 2
				class := driver.OK
				if i%10 == 0 {
					class = driver.Status5xx
				}
				r.Record(a, time.Duration(i%5000)*time.Microsecond, time.Microsecond, 10, 3, class, boom)
				if i%100 == 0 {
					r.RecordDropped(a)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-done
	snap := make([]ActionSnapshot, 2)
	r.Collect(snap)
	for i := range snap {
		total[i].Merge(&snap[i])
	}
	for a := 0; a < 2; a++ {
		got := total[a]
		want := uint64(writers * each / 2)
		if got.Count != want || got.Latency.N != want || got.Service.N != want {
			t.Errorf("action %d: count %d, latency n %d, service n %d; want %d", a, got.Count, got.Latency.N, got.Service.N, want)
		}
		if got.BytesIn != 10*want || got.BytesOut != 3*want {
			t.Errorf("action %d: bytes %d/%d", a, got.BytesIn, got.BytesOut)
		}
		// Errors (every 10th) and drops (every 100th) fall on even i: action 0.
		wantErr, wantDrop, wantMsg := uint64(writers*each/10), uint64(writers*each/100), "boom"
		if a == 1 {
			wantErr, wantDrop, wantMsg = 0, 0, ""
		}
		if got.Errors[driver.Status5xx] != wantErr || got.Messages[driver.Status5xx] != wantMsg {
			t.Errorf("action %d: %d 5xx errors (%q), want %d", a, got.Errors[driver.Status5xx], got.Messages[driver.Status5xx], wantErr)
		}
		if got.Dropped != wantDrop {
			t.Errorf("action %d: %d dropped, want %d", a, got.Dropped, wantDrop)
		}
		if got.Latency.Max > 4999 || got.Latency.Min != uint64(a) {
			t.Errorf("action %d: latency min/max %d/%d µs", a, got.Latency.Min, got.Latency.Max)
		}
	}
}

func TestCollectEmptiesTheRecorder(t *testing.T) {
	t.Parallel()
	r := NewRecorder(1)
	r.Record(0, time.Millisecond, time.Millisecond, 0, 0, driver.OK, nil)
	a := make([]ActionSnapshot, 1)
	r.Collect(a)
	b := make([]ActionSnapshot, 1)
	r.Collect(b)
	if a[0].Count != 1 || a[0].Latency.Min != 1000 || b[0].Count != 0 || b[0].Latency.N != 0 {
		t.Errorf("first collect %+v, second %+v", a[0].Count, b[0].Count)
	}
	// The spare bank was reset: a later record starts from zero min/max.
	r.Record(0, 5*time.Millisecond, time.Millisecond, 0, 0, driver.OK, nil)
	c := make([]ActionSnapshot, 1)
	r.Collect(c)
	if c[0].Latency.Min != 5000 || c[0].Latency.Max != 5000 {
		t.Errorf("min/max after reset = %d/%d, want 5000/5000", c[0].Latency.Min, c[0].Latency.Max)
	}
}

// BenchmarkRecord is the hot path of every action: it must not allocate.
func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(4)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(i&3, time.Duration(i&0xffff)*time.Microsecond, 100*time.Microsecond, 236, 40, driver.OK, nil)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	r := NewRecorder(1)
	allocs := testing.AllocsPerRun(1000, func() {
		r.Record(0, 300*time.Microsecond, 200*time.Microsecond, 236, 40, driver.OK, nil)
	})
	if allocs != 0 {
		t.Errorf("Record allocates %.1f times per call", allocs)
	}
}
