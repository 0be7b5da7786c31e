package scenario

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// ScaleDuration is d*num/den exactly where the int64 product overflows:
// a ramp of 1 h over 3 million users (3.6e12 ns x 3e6) did.
func TestScaleDuration(t *testing.T) {
	for _, c := range []struct {
		d        time.Duration
		num, den int64
	}{
		{time.Hour, 2_999_999, 3_000_000},
		{time.Hour, 1, 3},
		{time.Duration(MaxLength), 1<<40 - 1, 1 << 40},
		{time.Duration(math.MaxInt64), 7, 7},
		{90 * time.Second, 0, 5},
	} {
		want := new(big.Int).Mul(big.NewInt(int64(c.d)), big.NewInt(c.num))
		want.Quo(want, big.NewInt(c.den))
		if got := ScaleDuration(c.d, c.num, c.den); int64(got) != want.Int64() {
			t.Errorf("ScaleDuration(%v, %d, %d) = %d, want %s", c.d, c.num, c.den, got, want)
		}
	}
	// The plan's even ramp with that many users stays inside the ramp.
	r := RampUp{Duration: Duration(time.Hour)}
	if off := RampOffset(r, 2_999_999, 3_000_000); off <= 0 || off >= time.Hour {
		t.Errorf("offset of the last of 3e6 users in a 1 h ramp: %v", off)
	}
	r.Steps = 4
	if off := RampOffset(r, 2_999_999, 3_000_000); off != 45*time.Minute {
		t.Errorf("offset of the last of 3e6 users in a 4-step 1 h ramp: %v, want 45m", off)
	}
}
