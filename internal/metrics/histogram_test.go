package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestLayout(t *testing.T) {
	t.Parallel()
	if got := (bucketOf(MaxValue) + 2) * subBucketHalf; got != NumBuckets {
		t.Fatalf("NumBuckets = %d, layout needs %d", NumBuckets, got)
	}
	// Every value maps to a bucket whose bounds contain it, indices grow with
	// values, and the relative width stays under 1/128.
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 257, 511, 512, 1000, 4095, 4096, 1e6, 1e9, MaxValue} {
		i := Index(v)
		lo, w := Bounds(i)
		if v < lo || v >= lo+w {
			t.Errorf("Index(%d)=%d with bounds [%d,%d)", v, i, lo, lo+w)
		}
		if i < prev {
			t.Errorf("Index(%d)=%d is below the previous index %d", v, i, prev)
		}
		prev = i
		if v >= 256 && float64(w)/float64(lo) > 1.0/128 {
			t.Errorf("bucket of %d is %d wide: over 1/128 of %d", v, w, lo)
		}
	}
	for v := uint64(0); v < 256; v++ {
		if lo, w := Bounds(Index(v)); lo != v || w != 1 {
			t.Fatalf("value %d below 256 is not exact: [%d,+%d)", v, lo, w)
		}
	}
	if Index(MaxValue+12345) != Index(MaxValue) {
		t.Error("values above MaxValue are not clamped")
	}
}

func TestQuantilesMatchSortedValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var h Hist
	vals := make([]uint64, 100_000)
	for i := range vals {
		// Log-normal-ish latencies from 50 µs to about 2 s.
		vals[i] = uint64(math.Exp(rng.NormFloat64()*1.5+7)) + 50
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		if rel := math.Abs(float64(got)-float64(exact)) / float64(exact); rel > 1.0/128 {
			t.Errorf("Quantile(%g) = %d, exact %d: relative error %.4f", q, got, exact, rel)
		}
	}
	if h.Quantile(0) != vals[0] || h.Quantile(1) != vals[len(vals)-1] || h.Min != vals[0] || h.Max != vals[len(vals)-1] {
		t.Errorf("min/max = %d/%d, want %d/%d", h.Min, h.Max, vals[0], vals[len(vals)-1])
	}
	var sum uint64
	for _, v := range vals {
		sum += v
	}
	if h.Sum != sum || h.N != uint64(len(vals)) {
		t.Errorf("sum/n = %d/%d, want %d/%d", h.Sum, h.N, sum, len(vals))
	}
}

func TestMergeIsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, both Hist
	for i := 0; i < 20_000; i++ {
		v := rng.Uint64N(5_000_000)
		both.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	if !a.Equal(&both) {
		t.Fatal("merging two halves differs from recording everything in one")
	}
	var empty Hist
	empty.Merge(&Hist{})
	if empty.N != 0 || len(empty.Buckets()) != 0 {
		t.Error("merging empty histograms allocated or counted")
	}
}

func TestHistJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var h Hist
	for _, v := range []uint64{3, 3, 900, 123456, 99} {
		h.Record(v)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Hist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(&h) {
		t.Errorf("round trip changed the histogram: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"n":5,"counts":[[1,2]]}`), &back); err == nil {
		t.Error("counts that do not add up to n were accepted")
	}
	if err := json.Unmarshal([]byte(`{"n":1,"counts":[[99999,1]]}`), &back); err == nil {
		t.Error("an out-of-range bucket was accepted")
	}
}

func TestMicros(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want uint64
	}{{-5, 0}, {0, 0}, {499, 0}, {500, 1}, {1500, 2}, {time.Second, 1_000_000}} {
		if got := Micros(tt.d); got != tt.want {
			t.Errorf("Micros(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}
