package capacity

import (
	"fmt"
	"math"
	"slices"
)

// Comparison is two capacity searches of the same question (the same SLOs
// and dimension) side by side: how much more (or less) B carries than A.
type Comparison struct {
	A, B *Record
	// Ratio is B's capacity over A's; Low and High bound it with the two
	// searches' 95 % intervals taken together (B's low end over A's high
	// end, and the other way round): the ratio lies in it whenever both
	// intervals hold their capacities, which is at least 90 % of the time
	// for independent searches (0.95²). High is +Inf when A's interval has
	// no lower end or B's no upper end.
	Ratio, Low, High float64
	// Verdict is "more" (Low above 1), "less" (High below 1) or "same"
	// (the interval holds 1: no difference detectable at these
	// precisions).
	Verdict string
}

// Compare compares two searches. It refuses searches of different
// questions (other SLOs, another dimension), and searches without a
// capacity (Max.Value null: the SLO failed at --min, the generator was
// the limit), with why.
func Compare(a, b *Record) (Comparison, error) {
	c := Comparison{A: a, B: b}
	if a.Config.Dimension != b.Config.Dimension || a.Config.Unit != b.Config.Unit {
		return c, fmt.Errorf("not the same question: A varies %s, B varies %s", a.Config.Dimension, b.Config.Dimension)
	}
	if !slices.Equal(a.Config.SLOs, b.Config.SLOs) {
		return c, fmt.Errorf("not the same question: A's SLOs are %q, B's %q", a.Config.SLOs, b.Config.SLOs)
	}
	for _, r := range []struct {
		name string
		rec  *Record
	}{{"A", a}, {"B", b}} {
		if math.IsNaN(float64(r.rec.Max.Value)) {
			return c, fmt.Errorf("%s has no capacity to compare (status %s): %s", r.name, r.rec.Status, r.rec.Statement)
		}
	}
	va, vb := float64(a.Max.Value), float64(b.Max.Value)
	loA, hiA := float64(a.Max.CI95[0]), float64(a.Max.CI95[1])
	loB, hiB := float64(b.Max.CI95[0]), float64(b.Max.CI95[1])
	c.Ratio = vb / va
	c.Low, c.High = loB/hiA, hiB/loA
	if math.IsNaN(c.Low) {
		c.Low = 0
	}
	if math.IsNaN(c.High) || loA <= 0 {
		c.High = math.Inf(1)
	}
	switch {
	case c.Low > 1:
		c.Verdict = "more"
	case c.High < 1:
		c.Verdict = "less"
	default:
		c.Verdict = "same"
	}
	return c, nil
}
