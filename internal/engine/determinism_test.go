package engine

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

func perAction(t *testing.T, src string, seg plan.Segment) []uint64 {
	t.Helper()
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(s, seg)
	if err != nil {
		t.Fatal(err)
	}
	var out *Outcome
	synctest.Test(t, func(t *testing.T) {
		acts := make([]driver.Action, len(p.Actions))
		out, err = Run(context.Background(), Config{Plan: p, Driver: &sleepDriver{take: time.Millisecond}, Actions: acts, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
	})
	var names []string
	for _, a := range p.Actions {
		names = append(names, a.Name)
	}
	sum := result.Find(result.Summarize(names, 0, out.Intervals), result.All)
	var counts []uint64
	for _, a := range sum.Actions {
		counts = append(counts, a.Count)
	}
	return counts
}

const choices = "users: 7\nseed: %d\nclosed: {iterations: 300, think: 10ms, think_distribution: exponential}\nactions: [{name: a, weight: 1}, {name: b, weight: 2}, {name: c, weight: 3}]\n"

// One seed for all randomness: the same seed gives the same choices, another
// seed other choices.
func TestSameSeedSameRun(t *testing.T) {
	a := perAction(t, fmt.Sprintf(choices, 1), plan.Whole)
	b := perAction(t, fmt.Sprintf(choices, 1), plan.Whole)
	c := perAction(t, fmt.Sprintf(choices, 2), plan.Whole)
	if a[0]+a[1]+a[2] != 2100 {
		t.Fatalf("counts %v", a)
	}
	if a[0] != b[0] || a[1] != b[1] || a[2] != b[2] {
		t.Errorf("seed 1 twice: %v and %v", a, b)
	}
	if a[0] == c[0] && a[1] == c[1] {
		t.Errorf("seeds 1 and 2 made the same choices: %v", a)
	}
}

// Segments 1/3, 2/3 and 3/3 run together exactly what the whole plan runs:
// the same users make the same choices wherever they run.
func TestSegmentsAddUpToTheWholePlan(t *testing.T) {
	src := fmt.Sprintf(choices, 5)
	whole := perAction(t, src, plan.Whole)
	var sum [3]uint64
	for k := 1; k <= 3; k++ {
		for i, n := range perAction(t, src, plan.Segment{K: k, N: 3}) {
			sum[i] += n
		}
	}
	if sum[0] != whole[0] || sum[1] != whole[1] || sum[2] != whole[2] {
		t.Errorf("segments add up to %v, the whole plan does %v", sum, whole)
	}
	open := "users: 6\nmodel: open\nopen: {rate: 500/s}\nphases: {ramp_up: {duration: 1s}, steady: 2s}\nactions: [{name: a}, {name: b, weight: 3}]\n"
	w := perAction(t, open, plan.Whole)
	var s2 [2]uint64
	for k := 1; k <= 2; k++ {
		for i, n := range perAction(t, open, plan.Segment{K: k, N: 2}) {
			s2[i] += n
		}
	}
	if s2[0] != w[0] || s2[1] != w[1] {
		t.Errorf("open segments add up to %v, the whole plan does %v", s2, w)
	}
}
