// Package metrics records what users experience: per action, counts, bytes,
// errors by class, and latency in fixed-layout HDR-style histograms. Writers
// record without locks or allocations; a collector takes interval snapshots
// that merge exactly (bucket by bucket), so percentiles are never averaged.
package metrics

import (
	"math"
	"math/bits"
	"time"
)

// Histogram layout. Values are microseconds. Like HdrHistogram with a
// sub-bucket count of 256: values below 256 µs are exact, larger ones fall in
// buckets whose width is at most 1/128 of their value (relative error of a
// reported percentile below 0.4 %). Values above MaxValue are recorded as
// MaxValue. Every histogram in throng has this layout, so merging is adding
// counts index by index, and a journal written by one process is read by any
// other.
const (
	subBucketHalfBits = 7
	subBucketHalf     = 1 << subBucketHalfBits // 128
	// MaxValue is the largest value kept exactly in range: about 38 hours.
	MaxValue = 1<<37 - 1
	// NumBuckets is the length of every histogram's count array:
	// (bucketOf(MaxValue)+2) * 128, checked by a test.
	NumBuckets = 31 * subBucketHalf
)

func bucketOf(v uint64) int {
	return 56 - bits.LeadingZeros64(v|0xff)
}

// Index returns the count-array index of a value in microseconds.
func Index(v uint64) int {
	if v > MaxValue {
		v = MaxValue
	}
	b := bucketOf(v)
	sub := int(v >> uint(b))
	return (b+1)<<subBucketHalfBits + sub - subBucketHalf
}

// Bounds returns the lowest value of the bucket at index i and its width:
// every value v with lo <= v < lo+width has that index.
func Bounds(i int) (lo, width uint64) {
	b := i>>subBucketHalfBits - 1
	sub := i&(subBucketHalf-1) + subBucketHalf
	if b < 0 {
		sub -= subBucketHalf
		b = 0
	}
	return uint64(sub) << uint(b), 1 << uint(b)
}

// Micros converts a duration to whole microseconds, rounded to the nearest,
// and negative durations to 0.
func Micros(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d + 500) / time.Microsecond)
}

// Hist is a histogram snapshot: counts by index, exact count, sum, min and max.
// It is not safe for concurrent use; it is what collectors merge and results
// store. The zero Hist is empty and usable.
type Hist struct {
	Counts []uint64 // len NumBuckets, or nil when empty
	N      uint64   // number of values
	Sum    uint64   // sum of values, µs
	Min    uint64   // smallest value, µs (valid when N > 0)
	Max    uint64   // largest value, µs
}

// Record adds one value in microseconds.
func (h *Hist) Record(v uint64) { h.RecordN(v, 1) }

// RecordN adds n copies of a value in microseconds.
func (h *Hist) RecordN(v, n uint64) {
	if n == 0 {
		return
	}
	if h.Counts == nil {
		h.Counts = make([]uint64, NumBuckets)
	}
	h.Counts[Index(v)] += n
	if h.N == 0 || v < h.Min {
		h.Min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.N += n
	h.Sum += v * n
}

// Merge adds every value of o to h. Merging is exact: the result is the
// histogram of both sets of values.
func (h *Hist) Merge(o *Hist) {
	if o.N == 0 {
		return
	}
	if h.Counts == nil {
		h.Counts = make([]uint64, NumBuckets)
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	if h.N == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	if o.Max > h.Max {
		h.Max = o.Max
	}
	h.N += o.N
	h.Sum += o.Sum
}

// Mean returns the exact mean in microseconds, 0 when empty.
func (h *Hist) Mean() float64 {
	if h.N == 0 {
		return 0
	}
	return float64(h.Sum) / float64(h.N)
}

// Quantile returns the value at quantile q (0..1) in microseconds: the
// highest value equivalent to the bucket that holds the ceil(q*N)-th smallest
// value, never above the exact maximum nor below the exact minimum.
func (h *Hist) Quantile(q float64) uint64 {
	if h.N == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min
	}
	if q >= 1 {
		return h.Max
	}
	rank := uint64(math.Ceil(q * float64(h.N)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			lo, w := Bounds(i)
			v := lo + w - 1
			return max(min(v, h.Max), h.Min)
		}
	}
	return h.Max
}

// Reset empties the histogram, keeping its memory.
func (h *Hist) Reset() {
	clear(h.Counts)
	h.N, h.Sum, h.Min, h.Max = 0, 0, 0, 0
}
