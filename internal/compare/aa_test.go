package compare

import (
	"math/rand/v2"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

// called reports the rows of a comparison called different (better,
// worse, higher, lower).
func called(c *Comparison) []string {
	var out []string
	for _, r := range c.Rows {
		for _, d := range r.Diffs[1:] {
			switch d.Verdict {
			case Better, Worse, Higher, Lower:
				out = append(out, r.Phase+" "+r.ID+" "+string(d.Verdict))
			}
		}
	}
	return out
}

// aaRate runs n simulated A/A comparisons (two runs of reps repetitions
// of the same model, each drawn afresh) and returns the share with no row
// called different, and how many rows a comparison has.
func aaRate(t *testing.T, n, reps, trim int, m model, family string, seed uint64) (float64, int) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	clean, rows := 0, 0
	for i := 0; i < n; i++ {
		if m.interleave != "" {
			m.drift = drifts(rng, reps, 0.05)
		}
		a, b := simRun(rng, m, "A", reps, trim), simRun(rng, m, "B", reps, trim)
		c, err := Compare([]Input{{Path: "a.json", Run: a}, {Path: "b.json", Run: b}}, Options{Family: family})
		if err != nil {
			t.Fatal(err)
		}
		rows = c.Tested
		if len(called(c)) == 0 {
			clean++
		}
	}
	return float64(clean) / float64(n), rows
}

// A/A: identical configurations, with run-to-run noise (each run's level
// drawn afresh, sd 3 %) and autocorrelated intervals (AR(1), φ 0.7, sd
// 5 %), five repetitions a side (trim 1, as the SMB study), thirty-odd rows
// (client, per action, delivery and loss, server): no row may be called
// different in at least 95 % of 2,000 comparisons, under either family.
// The old per-interval Mann–Whitney test called rows different in
// most such comparisons (issue 20: 19 of 36 rows).
func TestAAFalseCallsSimulated(t *testing.T) {
	m := realistic
	m.lost = 0.01 // with mail's delivery and loss rows
	for _, tt := range []struct {
		family     string
		reps, trim int
		n          int
		paired     bool
	}{{FDR, 5, 1, 2000, false}, {FDR, 5, 1, 1000, true}, {FWER, 5, 1, 300, false}, {FDR, 3, 0, 300, false}, {FDR, 8, 1, 300, false}} {
		n := tt.n
		if testing.Short() {
			n = 200
		}
		m := m
		if tt.paired {
			m.interleave = "ab"
		}
		rate, rows := aaRate(t, n, tt.reps, tt.trim, m, tt.family, 42)
		t.Logf("%s, %d runs trim %d, paired %v: %.1f%% of %d A/A comparisons with no row called (%d rows tested each)",
			tt.family, tt.reps, tt.trim, tt.paired, 100*rate, n, rows)
		if rate < 0.95 || rows < 25 {
			t.Errorf("%s %d runs: only %.1f%% of A/A comparisons clean (%d rows)", tt.family, tt.reps, 100*rate, rows)
		}
	}
}

// The same simulation finds a true difference of 10 % in latency (a
// server slowed by a tenth; its rate falls with it in a closed loop): the
// control is not bought by never calling anything. With a quiet machine's
// noise (runs 1 %, intervals 2 %) five runs a side find it nearly always;
// with the noisier model of the A/A test, less often (logged).
func TestABPowerSimulated(t *testing.T) {
	power := func(m model, n int) int {
		rng := rand.New(rand.NewPCG(5, 6))
		found := 0
		for i := 0; i < n; i++ {
			if m.interleave != "" || m.drift != nil {
				m.drift = drifts(rng, 5, 0.05)
			}
			slow := m
			slow.lat *= 1.1
			slow.rate /= 1.1
			c, _ := Compare([]Input{{Path: "a", Run: simRun(rng, m, "A", 5, 1)}, {Path: "b", Run: simRun(rng, slow, "B", 5, 1)}}, Options{})
			for _, r := range c.Rows {
				if r.ID == "latency_p50_ms" && r.Diffs[1].Verdict == Worse {
					found++
				}
				if v := r.Diffs[1].Verdict; v == Better {
					t.Fatalf("%s called better for a slower server", r.ID)
				}
			}
		}
		return found
	}
	quiet := realistic
	quiet.runSD, quiet.ivSD = 0.01, 0.02
	// A machine whose state drifts by 5 % from round to round, on top of
	// each run's own 3 %: run interleaved, the drift cancels in pairs.
	interleaved := realistic
	interleaved.interleave = "ab"
	n := 100
	q, r := power(quiet, n), power(realistic, n)
	unpaired, paired := power(withDrift(realistic), n), power(interleaved, n)
	t.Logf("a 10%% slower server, 5 runs a side: latency p50 called worse in %d of %d comparisons (quiet machine), %d of %d (noisy); "+
		"with a 5%% drift from round to round: %d of %d unpaired, %d of %d paired by round", q, n, r, n, unpaired, n, paired, n)
	if q < 80*n/100 {
		t.Errorf("10%% slower found in %d of %d comparisons on a quiet machine", q, n)
	}
	if paired < 2*unpaired {
		t.Errorf("pairing by round found %d of %d, unpaired %d", paired, n, unpaired)
	}
}

// withDrift is m with the machine's drift from round to round, its runs
// not paired (compared as if run at different times).
func withDrift(m model) model {
	m.drift = make([]float64, 5)
	return m
}

var _ = result.All
