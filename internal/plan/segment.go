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
type Segment struct {
	K, N int
}

// Whole is the segment 1/1: all of the plan.
var Whole = Segment{1, 1}

// ParseSegment parses "k/n".
func ParseSegment(s string) (Segment, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("segment %q: want k/n, like 2/4", s)
	}
	seg := Segment{k, n}
	return seg, seg.Validate()
}

// Validate checks 1 <= k <= n.
func (s Segment) Validate() error {
	if s.N < 1 || s.K < 1 || s.K > s.N {
		return fmt.Errorf("segment %d/%d: want 1 <= k <= n", s.K, s.N)
	}
	return nil
}

// Owns reports whether the global index i (of a user or an arrival) belongs
// to this segment.
func (s Segment) Owns(i int64) bool { return i%int64(s.N) == int64(s.K-1) }

func (s Segment) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// ThreadShare returns the share of this segment's aggregate arrivals that
// event-loop thread t of threads keeps: the segment's arrivals are dealt to
// its threads round-robin, in arrival order.
func (s Segment) ThreadShare(t, threads int) func(j int64) bool {
	n, k := int64(s.N), int64(s.K-1)
	return func(j int64) bool {
		return j%n == k && (j/n)%int64(threads) == int64(t)
	}
}
