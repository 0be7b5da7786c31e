package compare

import (
	"fmt"
	"math"
	"strings"
)

// Disagreements lists the rows of a comparison whose verdict and shown
// confidence interval disagree, in words; none is expected (see
// ciLevel): a row called better, worse, higher or lower must have an
// interval on the side of its difference, away from 0; a row with no
// difference detectable must have 0 inside its interval. It checks the
// numbers and the text printed from them (rounding may print a bound as
// 0, never with the other sign). Tests hold every comparison they make to
// it.
func (c *Comparison) Disagreements() []string {
	var out []string
	for _, r := range c.Rows {
		base := float64(r.Values[0].Value)
		for k, d := range r.Diffs[1:] {
			lo, hi, dv := float64(d.Lo), float64(d.Hi), float64(d.D)
			cell := ciCell(r.Unit, base, d)
			l, h, _ := strings.Cut(cell, " … ")
			sl, sh := shownSign(l), shownSign(h)
			bad := ""
			switch d.Verdict {
			case Better, Worse, Higher, Lower:
				switch {
				case math.IsNaN(lo) || math.IsNaN(hi):
					bad = "no interval"
				case dv > 0 && !(lo > 0) || dv < 0 && !(hi < 0) || dv == 0:
					bad = "the interval holds 0"
				case dv > 0 && (sl < 0 || sh < 0) || dv < 0 && (sl > 0 || sh > 0):
					bad = "the printed interval crosses 0"
				}
			case Same:
				if math.IsNaN(float64(d.P)) {
					continue
				}
				switch {
				case !(lo <= 0 && hi >= 0):
					bad = "the interval excludes 0"
				case sl > 0 && sh > 0 || sl < 0 && sh < 0:
					bad = "the printed interval excludes 0"
				}
			}
			if bad != "" {
				out = append(out, fmt.Sprintf("%s %s run %d: %s (p %.3g, p adj %.3g), %s: %v … %v, shown %q at %s",
					r.Phase, r.ID, k+1, d.Verdict, float64(d.P), float64(d.PAdj), bad, lo, hi, cell, levelText(c.CILevel)))
			}
		}
	}
	return out
}

// shownSign is the sign of a printed number: 0 when all its digits are 0.
func shownSign(s string) int {
	if !strings.ContainsAny(s, "123456789") {
		return 0
	}
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return -1
	}
	return 1
}
