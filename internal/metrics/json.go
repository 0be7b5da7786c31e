package metrics

import (
	"encoding/json"
	"fmt"
)

// histJSON is the stored form of a Hist: only the buckets that hold values,
// as [index, count] pairs, so an empty or narrow histogram stays small.
type histJSON struct {
	N      uint64      `json:"n"`
	Sum    uint64      `json:"sum,omitempty"`
	Min    uint64      `json:"min,omitempty"`
	Max    uint64      `json:"max,omitempty"`
	Counts [][2]uint64 `json:"counts,omitempty"` // [index, count], by index
}

// MarshalJSON writes the histogram sparsely.
func (h Hist) MarshalJSON() ([]byte, error) {
	j := histJSON{N: h.N, Sum: h.Sum, Min: h.Min, Max: h.Max, Counts: make([][2]uint64, len(h.b))}
	for i, b := range h.b {
		j.Counts[i] = [2]uint64{uint64(b.Index), b.Count}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote and checks it is consistent.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Hist{N: j.N, Sum: j.Sum, Min: j.Min, Max: j.Max}
	var n uint64
	for _, p := range j.Counts {
		if p[0] >= NumBuckets {
			return fmt.Errorf("histogram bucket %d out of range", p[0])
		}
		h.addBucket(uint32(p[0]), p[1])
		n += p[1]
	}
	if n != j.N {
		return fmt.Errorf("histogram counts add up to %d, not n=%d", n, j.N)
	}
	return nil
}
