package webtruth

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// PhaseTruth is one phase of a run against the server: the true figures of
// the requests whose arrival falls in the phase's time (their holds), and
// throng's figures for it.
type PhaseTruth struct {
	Phase            string
	Requests         int           // arrived in the phase, answered
	Count            uint64        // throng's count of the phase's actions
	True, Measured   [3]float64    // p50, p95, p99 in ms
	From, To         time.Duration // the phase's span, from the repetition's start
	MaxRelativeError float64       // the largest |measured − true| / true of the three
}

// Quantiles are the percentiles compared: p50, p95, p99.
var Quantiles = [3]float64{0.50, 0.95, 0.99}

// Check compares the first repetition of run, made against s, with what s
// really did, phase by phase (the plan's phases, then "all"): a request
// belongs to the phase in which it arrived (an arrival reaches the server
// a fraction of a millisecond after its scheduled start).
func Check(run *result.Run, s *Server) ([]PhaseTruth, error) {
	if len(run.Repetitions) == 0 {
		return nil, fmt.Errorf("webtruth: the run has no repetition")
	}
	rep := &run.Repetitions[0]
	start := rep.StartedAt
	if start.IsZero() {
		return nil, fmt.Errorf("webtruth: the repetition has no start time")
	}
	var out []PhaseTruth
	add := func(name string, from, to time.Duration) error {
		sum := result.Find(rep.Summaries, name)
		if sum == nil {
			return fmt.Errorf("webtruth: the result has no %s phase", name)
		}
		reqs, lost := s.Requests(start.Add(from), start.Add(to))
		if lost > 0 {
			return fmt.Errorf("webtruth: %d requests beyond the log's bound", lost)
		}
		pt := PhaseTruth{Phase: name, Requests: len(reqs), Count: sum.Total.Count, From: from, To: to}
		lat := sum.Total.Latency
		pt.Measured = [3]float64{lat.P50Ms, lat.P95Ms, lat.P99Ms}
		for i, q := range Quantiles {
			pt.True[i] = float64(Quantile(reqs, q)) / 1e6
			if pt.True[i] > 0 {
				pt.MaxRelativeError = max(pt.MaxRelativeError, math.Abs(pt.Measured[i]-pt.True[i])/pt.True[i])
			}
		}
		out = append(out, pt)
		return nil
	}
	for _, ph := range run.Meta.Phases {
		to := time.Duration(ph.EndS * float64(time.Second))
		if ph.EndS < 0 {
			to = time.Duration(math.MaxInt64 / 2)
		}
		if err := add(ph.Name, time.Duration(ph.StartS*float64(time.Second)), to); err != nil {
			return nil, err
		}
	}
	if err := add(result.All, 0, time.Duration(math.MaxInt64/2)); err != nil {
		return nil, err
	}
	return out, nil
}

// Table writes the comparison as a text table.
func Table(pts []PhaseTruth) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %9s %9s   %-23s %-23s %-23s %s\n", "phase", "requests", "counted", "p50 true / throng", "p95 true / throng", "p99 true / throng", "worst")
	for _, p := range pts {
		fmt.Fprintf(&b, "%-10s %9d %9d", p.Phase, p.Requests, p.Count)
		for i := range Quantiles {
			fmt.Fprintf(&b, "   %9.2f / %9.2f ms", p.True[i], p.Measured[i])
		}
		fmt.Fprintf(&b, " %.2f%%\n", 100*p.MaxRelativeError)
	}
	return b.String()
}
