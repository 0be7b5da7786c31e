package plan

import (
	"math"
	"strings"
	"testing"
)

// Each row's bound is worked out by hand from its think times, pacing and
// steps (MaxUserRate's rule), not by the code under test.
func TestMaxUserRate(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		src  string
		want float64
	}{
		{"closed mix, think 2s: an action per 2 s", "users: 3\nclosed: {think: 2s}\nactions: [{name: a}, {name: b}]\n", 0.5},
		{"closed mix, exponential think of mean 4s", "users: 3\nclosed: {think: 4s, think_distribution: exponential}\nactions: [{name: a}]\n", 0.25},
		{"closed mix, paced 4s", "users: 3\nclosed: {pacing: 4s}\nactions: [{name: a}]\n", 0.25},
		{"closed mix, speedup 4 divides a 2s think", "users: 3\nspeedup: 4\nclosed: {think: 2s}\nactions: [{name: a}]\n", 2},
		{"closed mix without think: unbounded", "users: 3\nactions: [{name: a}]\n", inf},
		// a: 2 + 3 (while at its max) + 1 = 6 actions over 2 x 1s (repeat)
		// + 0 (while: maybe no time) + 0 + 1s (group) = 3s: 2/s;
		// b: 1 action over 3s + 1s: 0.25/s. The larger: 2.
		{"journeys: the busiest journey's steps over its sure think times", `
users: 2
closed: {think: 1s}
journeys:
  - name: a
    steps:
      - {name: list, repeat: 2, think: 1s}
      - {name: page, while: "more", max: 3, think: 1s}
      - {name: pay}
  - name: b
    steps:
      - {name: look, think: 3s}
`, 2},
		// The same journey a, paced 10s: 6 actions in at least 10 s.
		{"journeys paced: at least the pacing", `
users: 2
closed: {pacing: 10s}
journeys:
  - name: a
    steps:
      - {name: list, repeat: 2, think: 1s}
      - {name: page, while: "more", max: 3, think: 1s}
      - {name: pay}
`, 0.6},
		// Paced 1s but thinking 2s: 2 actions in at least 2 s.
		{"journeys paced shorter than their think times", `
users: 2
closed: {pacing: 1s}
journeys:
  - name: a
    steps:
      - {name: look, think: 2s}
      - {name: buy}
`, 1},
		// The web-shop preset's buy journey at think 1s: 6 actions, 6 s.
		{"journey of six steps thinking 1s each", `
users: 2
journeys:
  - name: buy
    steps:
      - {name: home, think: 1s}
      - {name: login, think: 1s}
      - {name: search, think: 1s}
      - {name: add, repeat: 2, think: 1s}
      - {name: checkout, think: 1s}
`, 1},
		{"per-user open: its summed rate", "users: 3\nmodel: open\nphases: {steady: 1m}\nactions: [{name: a, rate: 30/min}, {name: b, rate: 15/min}]\n", 0.75},
		{"aggregate open: no per-user bound", "users: 3\nmodel: open\nopen: {rate: 10/s}\nphases: {steady: 1m}\nactions: [{name: a}]\n", inf},
		{"passive: none", "phases: {steady: 1m}\ngroups:\n  - {name: subs, users: 10}\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			if !strings.Contains(src, "phases:") {
				src = "phases: {steady: 1m}\n" + src
			}
			p := mustPlan(t, mustScenario(t, src), Whole)
			if got := p.MaxUserRate(0); math.Abs(got-c.want) > 1e-9 && got != c.want {
				t.Errorf("MaxUserRate %v, want %v", got, c.want)
			}
		})
	}
}
