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
//   - runSD: the machine's state in a run (cache, placement, frequency),
//     shared by every figure of a repetition: each is multiplied by the
//     same exp(N(0, runSD));
//   - rowSD: each figure's own run-to-run noise, drawn independently for
//     every measure of every repetition: the rate, each action's latency
//     level and the spread of its distribution (so its p50 and p99 do not
//     move together), the server's context switches, the client's CPU,
//     the deliveries' latency and losses;
//   - ivSD, phi: within a run, each interval's rate and latency wander as
//     an AR(1) process (coefficient phi, innovation sd ivSD), so
//     neighbouring intervals are alike, as they are on a real machine;
//   - latency of one action: lognormal with median lat ms and shape 0.5;
//   - counts: the mean number, per repetition, of rare events counted
//     one by one (client-bound intervals, timed-out requests, lost and
//     failed deliveries): Poisson with that mean, so most repetitions count
//     0 and a few 1 or 2, as on a quiet server. 0: none.
type model struct {
	rate      float64 // actions/s of both actions together
	lat       float64 // median latency, ms
	switches  float64 // server context switches/s
	runSD     float64
	rowSD     float64
	ivSD, phi float64
	intervals int
	lost      float64 // share of deliveries lost (an event "deliver"); 0: no event
	counts    float64
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

var realistic = model{rate: 2000, lat: 2, switches: 9000, runSD: 0.02, rowSD: 0.02, ivSD: 0.05, phi: 0.7, intervals: 8}

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

// poisson draws a Poisson count of mean lambda (Knuth: small means).
func poisson(rng *rand.Rand, lambda float64) uint64 {
	l, k, p := math.Exp(-lambda), uint64(0), 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

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
	own := func() float64 { return math.Exp(m.rowSD * rng.NormFloat64()) }
	// spreads scatters n events over the intervals of a repetition.
	spread := func(n uint64) []uint64 {
		out := make([]uint64, m.intervals)
		for ; n > 0; n-- {
			out[rng.IntN(m.intervals)]++
		}
		return out
	}
	for r := 0; r < reps; r++ {
		level := math.Exp(m.runSD * rng.NormFloat64())
		if m.drift != nil {
			level *= m.drift[r]
		}
		// Each figure's own noise in this repetition.
		rateOwn, switchOwn, cpuOwn, lostOwn, deliverOwn := own(), own(), own(), own(), own()
		latOwn, shapeOwn := [2]float64{own(), own()}, [2]float64{own(), own()}
		var bound, timeouts, lost, failed []uint64
		if m.counts > 0 {
			bound = spread(min(poisson(rng, m.counts), uint64(m.intervals)))
			timeouts, lost, failed = spread(poisson(rng, m.counts)), spread(poisson(rng, m.counts)), spread(poisson(rng, m.counts))
		}
		rep := result.Repetition{Index: r}
		ar := 0.0
		for i := 0; i < m.intervals; i++ {
			ar = m.phi*ar + m.ivSD*rng.NormFloat64()
			f := level * math.Exp(ar)
			rate := m.rate / f / rateOwn // a slower interval serves fewer actions
			acts := make([]result.ActionInterval, len(actions))
			for a := 0; a < 2; a++ {
				var s metrics.ActionSnapshot
				n := uint64(rate / 2)
				s.Count = n
				if a == 0 && timeouts != nil {
					s.Errors[driver.Timeout] = timeouts[i]
				}
				per := n / uint64(len(latGrid))
				for _, z := range latGrid {
					v := uint64(1000 * m.lat * f * latOwn[a] * float64(a+1) * math.Exp(0.5*shapeOwn[a]*z))
					s.Latency.RecordN(v, per) // a closed model: no service time of its own
				}
				acts[a] = result.FromSnapshot(&s)
			}
			if events > 0 {
				var s metrics.ActionSnapshot
				n := uint64(rate / 4)
				s.Count = n
				var l uint64
				if m.counts > 0 {
					l = lost[i]
					s.Errors[driver.Timeout] = failed[i]
				} else {
					l = uint64(float64(n) * m.lost * lostOwn * math.Exp(0.2*rng.NormFloat64()))
				}
				s.Errors[driver.Lost] = l
				for _, z := range latGrid {
					s.Latency.RecordN(uint64(50000*f*deliverOwn*math.Exp(0.3*z)), (n-l)/uint64(len(latGrid)))
				}
				acts[2] = result.FromSnapshot(&s)
			}
			isBound := bound != nil && bound[i] > 0
			rep.Intervals = append(rep.Intervals, result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady",
				ActiveUsers: 10, UsersMean: 10, UsersMax: 10,
				Client:  result.Client{CPUCores: 0.5 * level * cpuOwn * math.Exp(ar/2), Bound: isBound, BoundWhy: map[bool]string{true: "event loop 0 busy 90%"}[isBound]},
				Actions: acts,
				Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{
					"cpus": 2, "context_switches_total": m.switches * f * switchOwn * (1 + 0.02*rng.NormFloat64()),
					"memory_used_bytes": 1988e6}}},
			})
		}
		rep.ElapsedS = float64(m.intervals)
		rep.Summaries = result.Summarize(actions, events, rep.Intervals)
		// As a run stores it (compare reads it from there).
		rep.Validity = result.CheckValidity(&meta, &rep)
		run.Repetitions = append(run.Repetitions, rep)
	}
	if reps > 1 {
		run.Aggregate = Aggregate(run.Repetitions, trim, false)
	}
	return run
}
