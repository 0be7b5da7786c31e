package compare

import (
	"math"
	"math/rand/v2"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// model is a configuration as the simulation sees it: two actions at a
// rate with lognormal latencies, and a server whose counters follow the
// load. Its noise is what makes identical runs differ in practice:
//
//   - runSD: a run's own level (machine state, cache, placement):
//     every figure of a repetition is multiplied by exp(N(0, runSD));
//   - ivSD, phi: within a run, each interval's rate and latency wander as
//     an AR(1) process (coefficient phi, innovation sd ivSD), so
//     neighbouring intervals are alike, as they are on a real machine;
//   - latency of one action: lognormal with median lat ms and shape 0.5.
type model struct {
	rate      float64 // actions/s of both actions together
	lat       float64 // median latency, ms
	switches  float64 // server context switches/s
	runSD     float64
	ivSD, phi float64
	intervals int
	lost      float64 // share of deliveries lost (an event "deliver"); 0: no event
	// drift, when set, multiplies every figure of repetition r by
	// drift[r]: the machine's state in round r, shared by configurations
	// run interleaved (interleave names their throng run).
	drift      []float64
	interleave string
}

// drifts draws the machine's state for n rounds: exp(N(0, sd)) each.
func drifts(rng *rand.Rand, n int, sd float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Exp(sd * rng.NormFloat64())
	}
	return out
}

var realistic = model{rate: 2000, lat: 2, switches: 9000, runSD: 0.03, ivSD: 0.05, phi: 0.7, intervals: 12}

// latGrid are 20 quantiles of a standard normal, midpoints of equal
// probability slices: a histogram of count values drawn from a
// lognormal is approximated by count/20 copies of each (fast and exact in
// its quantiles to the grid's resolution).
var latGrid = func() []float64 {
	var g []float64
	for i := 0; i < 20; i++ {
		g = append(g, normQuantile((float64(i)+0.5)/20))
	}
	return g
}()

func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// simRun draws a run of reps repetitions of the model.
func simRun(rng *rand.Rand, m model, label string, reps, trim int) *result.Run {
	actions := []string{"page", "search"}
	events := 0
	if m.lost > 0 {
		actions = append(actions, "deliver")
		events = 1
	}
	meta := fakeMeta(label)
	meta.Actions, meta.Trim, meta.Runs, meta.Interleave = actions, trim, reps, m.interleave
	if events > 0 {
		meta.Events = []string{"deliver"}
	}
	run := &result.Run{Schema: result.Schema, Meta: meta}
	for r := 0; r < reps; r++ {
		level := math.Exp(m.runSD * rng.NormFloat64())
		if m.drift != nil {
			level *= m.drift[r]
		}
		rep := result.Repetition{Index: r}
		ar := 0.0
		for i := 0; i < m.intervals; i++ {
			ar = m.phi*ar + m.ivSD*rng.NormFloat64()
			f := level * math.Exp(ar)
			rate := m.rate / f // a slower interval serves fewer actions
			acts := make([]result.ActionInterval, len(actions))
			for a := 0; a < 2; a++ {
				var s metrics.ActionSnapshot
				n := uint64(rate / 2)
				s.Count = n
				per := n / uint64(len(latGrid))
				for _, z := range latGrid {
					v := uint64(1000 * m.lat * f * float64(a+1) * math.Exp(0.5*z))
					s.Latency.RecordN(v, per)
					s.Service.RecordN(v/2, per)
				}
				acts[a] = result.FromSnapshot(&s)
			}
			if events > 0 {
				var s metrics.ActionSnapshot
				n := uint64(rate / 4)
				s.Count = n
				lost := uint64(float64(n) * m.lost * math.Exp(0.2*rng.NormFloat64()))
				s.Errors[driver.Lost] = lost
				for _, z := range latGrid {
					s.Latency.RecordN(uint64(50000*f*math.Exp(0.3*z)), (n-lost)/uint64(len(latGrid)))
				}
				acts[2] = result.FromSnapshot(&s)
			}
			rep.Intervals = append(rep.Intervals, result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady",
				ActiveUsers: 10, UsersMean: 10, UsersMax: 10,
				Client:  result.Client{CPUCores: 0.5 * level * math.Exp(ar/2)},
				Actions: acts,
				Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{
					"cpus": 2, "context_switches_total": m.switches * f * (1 + 0.02*rng.NormFloat64()),
					"memory_used_bytes": 1988e6}}},
			})
		}
		rep.ElapsedS = float64(m.intervals)
		rep.Summaries = result.Summarize(actions, events, rep.Intervals)
		run.Repetitions = append(run.Repetitions, rep)
	}
	if reps > 1 {
		run.Aggregate = Aggregate(run.Repetitions, trim, false)
	}
	return run
}
