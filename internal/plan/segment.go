package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment k/n is the share of a plan that one of n processes runs. Users go
// to segments round-robin by global index (user i to segment i mod n + 1),
// and so do aggregate arrivals (arrival j to segment j mod n + 1): n processes
// given 1/n ... n/n run exactly the whole plan, and each segment's load is
// spread over the whole timeline.
//
// Weighted segments (weights w1..wn, from `--weights 1,3`) deal the same
// way in rounds of w1+...+wn indices: in each round segment k takes wk
// consecutive indices. The shares are then w_k/Σw of users and arrivals.
type Segment struct {
	K, N int
	w    *weights // nil: every segment weighs 1
}

// weights is the dealing pattern of weighted segments. Immutable.
type weights struct {
	of    []int // weight of each segment
	slot  []int // segment (0-based) of each index of a round
	rank  []int // position of that index among its segment's in the round
	total int
}

// Whole is the segment 1/1: all of the plan.
var Whole = Segment{K: 1, N: 1}

// NewSegment returns segment k of n, weighted when weights is not empty
// (then it holds n positive integers).
func NewSegment(k, n int, ws []int) (Segment, error) {
	seg := Segment{K: k, N: n}
	if err := seg.Validate(); err != nil {
		return Segment{}, err
	}
	if len(ws) == 0 {
		return seg, nil
	}
	if len(ws) != n {
		return Segment{}, fmt.Errorf("%d weights for %d segments", len(ws), n)
	}
	w := &weights{of: append([]int(nil), ws...)}
	for i, x := range ws {
		if x < 1 || x > 1000 {
			return Segment{}, fmt.Errorf("weight %d of segment %d: want 1..1000", x, i+1)
		}
		for r := 0; r < x; r++ {
			w.slot = append(w.slot, i)
			w.rank = append(w.rank, r)
		}
		w.total += x
	}
	allOne := true
	for _, x := range ws {
		allOne = allOne && x == 1
	}
	if !allOne {
		seg.w = w
	}
	return seg, nil
}

// ParseSegment parses "k/n".
func ParseSegment(s string) (Segment, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("segment %q: want k/n, like 2/4", s)
	}
	return NewSegment(k, n, nil)
}

// ParseWeights parses "1,3,2".
func ParseWeights(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 1 {
			return nil, fmt.Errorf("weights %q: want positive whole numbers, like 1,3", s)
		}
		out = append(out, x)
	}
	return out, nil
}

// Validate checks 1 <= k <= n.
func (s Segment) Validate() error {
	if s.N < 1 || s.K < 1 || s.K > s.N {
		return fmt.Errorf("segment %d/%d: want 1 <= k <= n", s.K, s.N)
	}
	return nil
}

// Weights returns the segments' weights (nil when they all weigh 1).
func (s Segment) Weights() []int {
	if s.w == nil {
		return nil
	}
	return append([]int(nil), s.w.of...)
}

// Owns reports whether the global index i (of a user or an arrival) belongs
// to this segment.
func (s Segment) Owns(i int64) bool {
	if s.w == nil {
		return i%int64(s.N) == int64(s.K-1)
	}
	return s.w.slot[i%int64(s.w.total)] == s.K-1
}

// Share is how many of the indices 0..total-1 this segment owns: its part
// of a count shared by the users (closed.total), dealt as arrivals are.
// The shares of 1/n ... n/n add up to total.
func (s Segment) Share(total int64) int64 {
	if total <= 0 {
		return 0
	}
	round, mine := int64(s.N), int64(1)
	if s.w != nil {
		round, mine = int64(s.w.total), int64(s.w.of[s.K-1])
	}
	n := total / round * mine
	for i := total / round * round; i < total; i++ {
		if s.Owns(i) {
			n++
		}
	}
	return n
}

// ordinal is the position of an index this segment owns among the indices
// it owns: 0, 1, 2, ...
func (s Segment) ordinal(i int64) int64 {
	if s.w == nil {
		return i / int64(s.N)
	}
	t := int64(s.w.total)
	return (i/t)*int64(s.w.of[s.K-1]) + int64(s.w.rank[i%t])
}

func (s Segment) String() string {
	if s.w == nil {
		return fmt.Sprintf("%d/%d", s.K, s.N)
	}
	ws := make([]string, len(s.w.of))
	for i, x := range s.w.of {
		ws[i] = strconv.Itoa(x)
	}
	return fmt.Sprintf("%d/%d@%s", s.K, s.N, strings.Join(ws, ","))
}

// ThreadShare returns the share of this segment's aggregate arrivals that
// event-loop thread t of threads keeps: the segment's arrivals are dealt to
// its threads round-robin, in arrival order.
func (s Segment) ThreadShare(t, threads int) func(j int64) bool {
	return func(j int64) bool {
		return s.Owns(j) && s.ordinal(j)%int64(threads) == int64(t)
	}
}
