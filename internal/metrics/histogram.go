// Package metrics records what users experience: per action, counts, bytes,
// errors by class, and latency in fixed-layout HDR-style histograms. Writers
// record without locks or allocations; a collector takes interval snapshots
// that merge exactly (bucket by bucket), so percentiles are never averaged.
package metrics

import (
	"math"
	"math/bits"
	"sort"
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

// Hist is a histogram snapshot: the counts of its non-empty buckets, and
// its exact count, sum, min and max. It keeps only the buckets that hold
// values (a few dozen to a few hundred), so a long run's thousands of
// interval histograms stay small. It is not safe for concurrent use; it is
// what collectors merge and results store. The zero Hist is empty and usable.
type Hist struct {
	b   []Bucket // non-empty buckets, by increasing index
	N   uint64   // number of values
	Sum uint64   // sum of values, µs
	Min uint64   // smallest value, µs (valid when N > 0)
	Max uint64   // largest value, µs
}

// Bucket is one non-empty bucket of a Hist: its index in the layout (see
// Index and Bounds) and its count.
type Bucket struct {
	Index uint32
	Count uint64
}

// Buckets returns the non-empty buckets by increasing index. The slice
// belongs to the histogram: do not modify it.
func (h *Hist) Buckets() []Bucket { return h.b }

// Equal reports whether two histograms hold the same values.
func (h *Hist) Equal(o *Hist) bool {
	if h.N != o.N || h.Sum != o.Sum || h.Min != o.Min || h.Max != o.Max || len(h.b) != len(o.b) {
		return false
	}
	for i := range h.b {
		if h.b[i] != o.b[i] {
			return false
		}
	}
	return true
}

// Record adds one value in microseconds.
func (h *Hist) Record(v uint64) { h.RecordN(v, 1) }

// RecordN adds n copies of a value in microseconds.
func (h *Hist) RecordN(v, n uint64) {
	if n == 0 {
		return
	}
	h.addBucket(uint32(Index(v)), n)
	if h.N == 0 || v < h.Min {
		h.Min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.N += n
	h.Sum += v * n
}

// addBucket adds c to the bucket at index i (only the buckets: N, Sum, Min
// and Max are the caller's).
func (h *Hist) addBucket(i uint32, c uint64) {
	k := sort.Search(len(h.b), func(j int) bool { return h.b[j].Index >= i })
	if k < len(h.b) && h.b[k].Index == i {
		h.b[k].Count += c
		return
	}
	h.b = append(h.b, Bucket{})
	copy(h.b[k+1:], h.b[k:])
	h.b[k] = Bucket{Index: i, Count: c}
}

// Merge adds every value of o to h. Merging is exact: the result is the
// histogram of both sets of values.
func (h *Hist) Merge(o *Hist) {
	if o.N == 0 {
		return
	}
	switch {
	case len(h.b) == 0:
		h.b = append(h.b[:0], o.b...)
	default:
		out := make([]Bucket, 0, len(h.b)+len(o.b))
		i, j := 0, 0
		for i < len(h.b) || j < len(o.b) {
			switch {
			case j == len(o.b) || (i < len(h.b) && h.b[i].Index < o.b[j].Index):
				out = append(out, h.b[i])
				i++
			case i == len(h.b) || o.b[j].Index < h.b[i].Index:
				out = append(out, o.b[j])
				j++
			default:
				out = append(out, Bucket{Index: h.b[i].Index, Count: h.b[i].Count + o.b[j].Count})
				i++
				j++
			}
		}
		h.b = out
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
	for _, b := range h.b {
		seen += b.Count
		if seen >= rank {
			lo, w := Bounds(int(b.Index))
			v := lo + w - 1
			return max(min(v, h.Max), h.Min)
		}
	}
	return h.Max
}

// Reset empties the histogram, keeping its memory.
func (h *Hist) Reset() {
	h.b = h.b[:0]
	h.N, h.Sum, h.Min, h.Max = 0, 0, 0, 0
}
