package scenario

import (
	"math"
	"math/bits"
	"time"
)

// Bounds that keep every time and count of a run inside Go's int64
// arithmetic (durations are int64 nanoseconds: at most 292 years).
const (
	// MaxLength bounds every duration of a scenario and the planned length
	// of a run: 100 years, so that the sums and products of the timeline
	// cannot overflow.
	MaxLength = Duration(100 * 365 * 24 * time.Hour)
	// MaxUsers bounds users (and a group's users): far more than any
	// machine holds (see plan.Estimate), small enough for the arithmetic
	// on user counts.
	MaxUsers = 1 << 40
)

// ScaleDuration returns d*num/den without overflow (128-bit product),
// for 0 <= num <= den and d >= 0: the offset of user num of den in a ramp
// of length d.
func ScaleDuration(d time.Duration, num, den int64) time.Duration {
	if d <= 0 || num <= 0 || den <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(d), uint64(num))
	if hi >= uint64(den) {
		return time.Duration(math.MaxInt64)
	}
	q, _ := bits.Div64(hi, lo, uint64(den))
	return time.Duration(min(q, math.MaxInt64))
}

// finite reports whether x is a number (not NaN nor infinite).
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
