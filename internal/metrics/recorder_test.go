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
	r := NewRecorder(2, nil)
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
			r.Collect([][]ActionSnapshot{snap})
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
				r.Record(a, 0, time.Duration(i%5000)*time.Microsecond, time.Microsecond, 10, 3, class, boom)
				if i%100 == 0 {
					r.RecordDropped(a, 0)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-done
	snap := make([]ActionSnapshot, 2)
	r.Collect([][]ActionSnapshot{snap})
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
	r := NewRecorder(1, nil)
	r.Record(0, 0, time.Millisecond, time.Millisecond, 0, 0, driver.OK, nil)
	a := make([]ActionSnapshot, 1)
	r.Collect([][]ActionSnapshot{a})
	b := make([]ActionSnapshot, 1)
	r.Collect([][]ActionSnapshot{b})
	if a[0].Count != 1 || a[0].Latency.Min != 1000 || b[0].Count != 0 || b[0].Latency.N != 0 {
		t.Errorf("first collect %+v, second %+v", a[0].Count, b[0].Count)
	}
	// The spare bank was reset: a later record starts from zero min/max.
	r.Record(0, 0, 5*time.Millisecond, time.Millisecond, 0, 0, driver.OK, nil)
	c := make([]ActionSnapshot, 1)
	r.Collect([][]ActionSnapshot{c})
	if c[0].Latency.Min != 5000 || c[0].Latency.Max != 5000 {
		t.Errorf("min/max after reset = %d/%d, want 5000/5000", c[0].Latency.Min, c[0].Latency.Max)
	}
}

// BenchmarkRecord is the hot path of every action: it must not allocate.
func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(4, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(i&3, 0, time.Duration(i&0xffff)*time.Microsecond, 100*time.Microsecond, 236, 40, driver.OK, nil)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	r := NewRecorder(1, nil)
	allocs := testing.AllocsPerRun(1000, func() {
		r.Record(0, 0, 300*time.Microsecond, 200*time.Microsecond, 236, 40, driver.OK, nil)
	})
	if allocs != 0 {
		t.Errorf("Record allocates %.1f times per call", allocs)
	}
}

// A bank that was collected keeps its histogram groups: recording into it
// again allocates nothing, whatever the values.
func TestRecordAfterCollectDoesNotAllocate(t *testing.T) {
	r := NewRecorder(1, nil)
	snap := r.Snapshots()
	for range 2 { // both banks
		for v := time.Microsecond; v < time.Minute; v *= 2 {
			r.Record(0, 0, v, v, 0, 0, driver.OK, nil)
		}
		r.Collect(snap)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		v := time.Duration(1<<(i%26)) * time.Microsecond
		r.Record(0, 0, v, v, 0, 0, driver.OK, nil)
		if i%100 == 0 {
			r.Collect(snap)
		}
	})
	if allocs != 0 {
		t.Errorf("Record allocates %.2f times per call", allocs)
	}
}

// Every outcome counts in the phase of the time it is given (its scheduled
// start, its cause), not of when it is recorded; a phase begun at run time
// takes exactly the times at or after its beginning.
func TestRecorderCountsInThePhaseOfTheScheduledStart(t *testing.T) {
	ph := NewPhases([]string{"ramp-up", "steady"}, []time.Duration{0, 10 * time.Second}, "ramp-down", "drain")
	r := NewRecorder(2, ph)
	r.Record(0, 9*time.Second, 3*time.Second, time.Second, 0, 0, driver.OK, nil) // scheduled in the ramp-up, finished in the steady state
	r.Record(1, 10*time.Second, time.Millisecond, time.Millisecond, 0, 0, driver.OK, nil)
	r.RecordDropped(1, 15*time.Second)
	clock := 20 * time.Second
	now := func() time.Duration { return clock }
	if at, ok := ph.Begin("ramp-down", now); !ok || at != clock {
		t.Fatalf("Begin = %v, %v", at, ok)
	}
	if _, ok := ph.Begin("ramp-down", now); ok {
		t.Error("ramp-down began twice")
	}
	r.Record(1, 19*time.Second, 2*time.Second, time.Second, 0, 0, driver.OK, nil) // steady, recorded in the ramp-down
	r.Record(1, 20*time.Second, time.Millisecond, time.Millisecond, 0, 0, driver.Status5xx, nil)
	r.RecordUntimed(0, 5*time.Second, driver.Lost, nil) // caused in the ramp-up, found at the drain
	clock = 30 * time.Second
	ph.Begin("drain", now)
	r.RecordUntimed(0, 31*time.Second, driver.Lost, nil)
	snap := r.Snapshots()
	r.Collect(snap)
	want := [][2]uint64{{2, 0}, {0, 2}, {0, 1}, {1, 0}} // counts by phase, action
	for p := range want {
		for a := range want[p] {
			if got := snap[p][a].Count; got != want[p][a] {
				t.Errorf("%s, action %d: %d, want %d", ph.Name(p), a, got, want[p][a])
			}
		}
	}
	if snap[1][1].Dropped != 1 || snap[2][1].Errors[driver.Status5xx] != 1 || snap[0][0].Errors[driver.Lost] != 1 {
		t.Errorf("dropped %d in steady, 5xx %d in ramp-down, lost %d in ramp-up", snap[1][1].Dropped, snap[2][1].Errors[driver.Status5xx], snap[0][0].Errors[driver.Lost])
	}
	if ph.Of(-time.Second) != 0 || ph.Of(time.Hour) != 3 || ph.Index("drain") != 3 || ph.Index("tail") != -1 {
		t.Errorf("Of(-1s) %d, Of(1h) %d, Index(drain) %d", ph.Of(-time.Second), ph.Of(time.Hour), ph.Index("drain"))
	}
}

// A time taken before a phase begins never lands in it, and one taken at
// or after always does, even while Begin runs: writers race Begin many
// times and every attribution is checked against the time Begin took.
func TestPhaseBeginIsExact(t *testing.T) {
	base := time.Now()
	now := func() time.Duration { return time.Since(base) }
	type seen struct {
		t     time.Duration
		phase int
	}
	for range 200 {
		ph := NewPhases([]string{"steady"}, []time.Duration{0}, "ramp-down")
		var wg sync.WaitGroup
		got := make([][]seen, 4)
		for w := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					t := now()
					got[w] = append(got[w], seen{t, ph.Of(t)})
				}
			}()
		}
		at, _ := ph.Begin("ramp-down", now)
		wg.Wait()
		for _, g := range got {
			for _, s := range g {
				if want := map[bool]int{true: 1, false: 0}[s.t >= at]; s.phase != want {
					t.Fatalf("time %v attributed to phase %d, the ramp-down began at %v", s.t, s.phase, at)
				}
			}
		}
	}
}

// An action that was not attempted (class Skipped) is counted in that
// class alone: not in the finished count, the histograms nor the bytes.
func TestSkippedIsCountedApart(t *testing.T) {
	r := NewRecorder(1, nil)
	r.Record(0, 0, time.Millisecond, time.Millisecond, 10, 10, driver.OK, nil)
	r.Record(0, 0, time.Microsecond, time.Microsecond, 5, 5, driver.Skipped, errors.New("no CalDAV"))
	r.RecordUntimed(0, 0, driver.Skipped, nil)
	snap := r.Snapshots()
	r.Collect(snap)
	s := snap[0][0]
	if s.Count != 1 || s.Latency.N != 1 || s.Service.N != 1 || s.BytesIn != 10 || s.Errors[driver.Skipped] != 2 || s.ErrorCount() != 0 || s.Messages[driver.Skipped] != "no CalDAV" {
		t.Errorf("count %d, latency n %d, bytes %d, skipped %d, errors %d", s.Count, s.Latency.N, s.BytesIn, s.Errors[driver.Skipped], s.ErrorCount())
	}
	// A bank holding only skipped actions is emptied too.
	r.Record(0, 0, 0, 0, 0, 0, driver.Skipped, nil)
	for i := range snap[0] {
		snap[0][i] = ActionSnapshot{}
	}
	r.Collect(snap)
	r.Collect(snap)
	if snap[0][0].Errors[driver.Skipped] != 1 {
		t.Errorf("skipped %d after two collects, want 1", snap[0][0].Errors[driver.Skipped])
	}
}

// BenchmarkRecordPhases is Record with a run's usual attribution: three
// planned phases and one begun at run time (the drain).
func BenchmarkRecordPhases(b *testing.B) {
	ph := NewPhases([]string{"ramp-up", "steady", "ramp-down"}, []time.Duration{0, time.Minute, 2 * time.Minute}, "drain")
	r := NewRecorder(4, ph)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(i&3, time.Duration(i&0xff)*time.Second, time.Duration(i&0xffff)*time.Microsecond, 100*time.Microsecond, 236, 40, driver.OK, nil)
	}
}
