package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/textfmt"
)

// CapacityCompare writes the comparison of two capacity searches: each
// one's capacity with its 95 % interval, then one sentence, "B carries
// 38 % more users at the same SLO (...)", with the ratio's interval.
//
//	A  web-static · http://10.0.0.5   6,127 users (95 % CI 5,868–6,399)  found
//	B  web-static · http://10.0.0.6   8,460 users (95 % CI 8,100–8,830)  found
//	B carries 38 % more users at the same SLO (p95 < 1s): ×1.38 (at least 90 % CI ×1.27–×1.50)
func CapacityCompare(w io.Writer, c *capacity.Comparison) error {
	ew := &errWriter{w: w}
	cfg := &c.A.Config
	t := &textfmt.Table{}
	t.Left = func(col int, _ string) bool { return col != 2 }
	t.Add("", "search", "capacity", "status")
	for _, r := range []struct {
		name string
		rec  *capacity.Record
	}{{"A", c.A}, {"B", c.B}} {
		what := strings.Join(nonEmpty(r.rec.Scenario, r.rec.Target), " · ")
		t.Add(r.name, what, capacity.LoadText(float64(r.rec.Max.Value), cfg.Unit)+" ("+ciText(r.rec, cfg.Unit)+")", r.rec.Status.String())
	}
	if ew.err == nil {
		ew.err = t.Write(ew.w)
	}
	word := dimensionWord(cfg)
	slos := strings.Join(cfg.SLOs, ", ")
	pct := 100 * (c.Ratio - 1)
	more := "more"
	if pct < 0 {
		more = "fewer"
		if cfg.Unit != "users" {
			more = "less"
		}
	}
	ci := fmt.Sprintf("×%.3g (at least 90 %% CI ×%.3g–%s, from the two 95 %% intervals)", c.Ratio, c.Low, ratioText(c.High))
	switch c.Verdict {
	case "same":
		ew.printf("\nno difference detectable at the same SLO (%s): B carries %.0f %% %s %s, but the interval holds ×1: %s\n",
			slos, math.Abs(pct), more, word, ci)
	default:
		ew.printf("\nB carries %.0f %% %s %s at the same SLO (%s): %s\n", math.Abs(pct), more, word, slos, ci)
	}
	return ew.err
}

func ciText(rec *capacity.Record, unit string) string {
	lo, hi := float64(rec.Max.CI95[0]), float64(rec.Max.CI95[1])
	hiText := "?"
	if !math.IsNaN(hi) && !math.IsInf(hi, 0) {
		hiText = capacity.LoadText(hi, unit)
	}
	loText := "?"
	if !math.IsNaN(lo) {
		loText = textfmt.Num(lo)
	}
	return "95 % CI " + loText + "–" + hiText
}

func ratioText(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("×%.3g", x)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
