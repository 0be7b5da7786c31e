package result

import (
	"math"
	"strconv"
)

// Aggregate summarizes several repetitions of one scenario: for each phase
// and measure, every repetition's value, the mean of the middle ones
// (dropping Trim at each end, as the SMB study drops the fastest and the slowest
// run), the median, the minimum and the maximum.
type Aggregate struct {
	Trim int `json:"trim"`
	// RankedBy is the measure that orders the repetitions from fastest to
	// slowest ("elapsed_s" for runs bounded by a count, else "rate_per_s");
	// the same repetitions are kept for every measure.
	RankedBy string           `json:"ranked_by"`
	Kept     []int            `json:"kept"` // indices of the repetitions in the trimmed mean
	Phases   []AggregatePhase `json:"phases"`
}

// AggregatePhase holds the measures of one phase.
type AggregatePhase struct {
	Phase    string    `json:"phase"`
	Measures []Measure `json:"measures"`
}

// Measure is one figure across repetitions. A value that does not exist
// (a phase a repetition never reached) is NaN, stored as null.
type Measure struct {
	Name        string `json:"name"`
	Values      []Num  `json:"values"` // by repetition index
	TrimmedMean Num    `json:"trimmed_mean"`
	Median      Num    `json:"median"`
	Min         Num    `json:"min"`
	Max         Num    `json:"max"`
}

// Num is a float64 that is stored as null when it is NaN or infinite, which
// JSON cannot hold.
type Num float64

// MarshalJSON writes null for NaN and infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}
