package plan

import (
	"math"
	"math/rand/v2"
	"sort"
)

// splitmix64 is a fast, well-mixed hash of a 64-bit value; it derives
// independent seeds and per-arrival random numbers from the scenario seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// UserSeed derives the seed of user id's random stream from the scenario
// seed, so a user behaves the same in every segment and every run.
func UserSeed(seed uint64, id int) uint64 {
	return splitmix64(splitmix64(seed) ^ uint64(id)*0xd1342543de82ef95)
}

// Rand is a user's (or a stream's) random source. It is not safe for
// concurrent use: each user owns one.
type Rand struct{ r *rand.Rand }

// NewRand returns a deterministic source for a seed.
func NewRand(seed uint64) *Rand {
	return &Rand{rand.New(rand.NewPCG(seed, splitmix64(seed)))}
}

// Float64 returns a uniform number in [0, 1).
func (r *Rand) Float64() float64 { return r.r.Float64() }

// Exp returns an exponentially distributed number with mean 1.
func (r *Rand) Exp() float64 { return r.r.ExpFloat64() }

// unitFloat maps a hash to a uniform number in [0, 1).
func unitFloat(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// chooser picks an index with probability proportional to its weight.
type chooser struct {
	cum []float64 // cumulative weights, normalised to end at 1
}

func newChooser(weights []float64) chooser {
	total := 0.0
	for _, w := range weights {
		total += math.Max(w, 0)
	}
	c := chooser{cum: make([]float64, len(weights))}
	acc := 0.0
	for i, w := range weights {
		acc += math.Max(w, 0)
		if total > 0 {
			c.cum[i] = acc / total
		}
	}
	return c
}

// pick returns the index whose cumulative weight interval holds u in [0,1).
// An index with weight 0 is never picked.
func (c chooser) pick(u float64) int {
	n := len(c.cum)
	if n <= 1 {
		return 0
	}
	var i int
	if n <= 8 {
		for i < n && c.cum[i] <= u {
			i++
		}
	} else {
		i = sort.Search(n, func(k int) bool { return c.cum[k] > u })
	}
	if i == n {
		// Rounding left the last cumulative weight a hair under u: take the
		// last action that has weight.
		for i = n - 1; i > 0 && c.cum[i] == c.cum[i-1]; i-- {
		}
	}
	return i
}
