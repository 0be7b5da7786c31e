package output

import (
	"math"

	"github.com/throng-io/throng/internal/metrics"
)

// LatencyBounds are the upper bounds, in seconds, of the classic latency
// buckets every output uses (Prometheus le, OTLP explicit bounds): from
// 100 µs to 1 minute, about 2.5× apart, for request latencies from a fast
// loopback server to a slow mail search.
var LatencyBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// bucketValue is the value, in seconds, that places an HDR bucket of the
// histogram layout (metrics.Bounds) in a classic or native bucket: its
// lowest value. Below 256 µs every HDR bucket holds one value, so the
// placement is exact; above, an HDR bucket spans at most 1/128 of its
// value, so a value within 0.8 % above a bound may be counted at it.
func bucketValue(index uint32) float64 {
	lo, _ := metrics.Bounds(int(index))
	return float64(lo) / 1e6
}

// Cumulative returns the histogram's cumulative counts at each of bounds
// (seconds): counts[i] is how many values are at most bounds[i], to the
// resolution said at bucketValue. The +Inf bucket is h.N.
func Cumulative(h *metrics.Hist, bounds []float64) []uint64 {
	counts := make([]uint64, len(bounds))
	j := 0
	var seen uint64
	for _, b := range h.Buckets() {
		v := bucketValue(b.Index)
		for j < len(bounds) && v > bounds[j] {
			counts[j] = seen
			j++
		}
		seen += b.Count
	}
	for ; j < len(bounds); j++ {
		counts[j] = seen
	}
	return counts
}

// NativeSchema is the schema of the native (exponential) histograms:
// buckets grow by 2^(1/8), about 9 %.
const NativeSchema = 3

// NativeZeroThreshold is the native histograms' zero bucket: values of
// 0 µs (an action that took less than half a microsecond).
const NativeZeroThreshold = 1e-7

// Native returns the histogram's native-histogram buckets at NativeSchema:
// the zero bucket's count and the positive buckets' counts by Prometheus
// index i, the bucket (2^((i-1)/8), 2^(i/8)] seconds. (OpenTelemetry's
// exponential histograms number the same bucket i-1.)
func Native(h *metrics.Hist) (zero uint64, buckets map[int]int64) {
	buckets = map[int]int64{}
	for _, b := range h.Buckets() {
		v := bucketValue(b.Index)
		if v <= NativeZeroThreshold {
			zero += b.Count
			continue
		}
		buckets[nativeIndex(v)] += int64(b.Count)
	}
	return zero, buckets
}

// nativeIndex is the index of the native bucket holding v > 0.
func nativeIndex(v float64) int {
	frac, exp := math.Frexp(v) // v = frac * 2^exp, frac in [0.5, 1)
	// Index i holds (2^((i-1)/8), 2^(i/8)]: i = ceil(8*log2(v)).
	i := int(math.Ceil(float64(NativeSchema8)*math.Log2(frac))) + NativeSchema8*exp
	// Correct a rounding of the logarithm at a bucket's edge.
	for v > pow8(i) {
		i++
	}
	for v <= pow8(i-1) {
		i--
	}
	return i
}

// NativeSchema8 is 2^NativeSchema, the buckets per power of two.
const NativeSchema8 = 1 << NativeSchema

// Seconds is a histogram's sum in seconds.
func Seconds(h *metrics.Hist) float64 { return float64(h.Sum) / 1e6 }

// pow8 is 2^(i/8), a native bucket's upper bound.
func pow8(i int) float64 { return math.Exp2(float64(i) / NativeSchema8) }
