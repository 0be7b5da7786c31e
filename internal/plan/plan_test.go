package plan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/scenario"
)

func mustScenario(t *testing.T, src string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func mustPlan(t *testing.T, s *scenario.Scenario, seg Segment) *Plan {
	t.Helper()
	p, err := Compile(s, seg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const staged = `
users: 2500
closed: {think: 1m}
phases:
  ramp_up: {every: 1s, group: 1000, pause: 13m}
  steady: 2h
  ramp_down: 100s
actions: [{path: /}]
`

// The Domino study: groups of 1,000 users, one new user per second, 13 minutes
// between groups.
func TestStagedRampStartTimes(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, mustScenario(t, staged), Whole)
	at := func(id int) time.Duration { return p.Users[id].Start }
	for _, tt := range []struct {
		id   int
		want time.Duration
	}{
		{0, 0},
		{999, 999 * time.Second},
		{1000, 1000*time.Second + 13*time.Minute},
		{2000, 2 * (1000*time.Second + 13*time.Minute)},
		{2499, 2*(1000*time.Second+13*time.Minute) + 499*time.Second},
	} {
		if got := at(tt.id); got != tt.want {
			t.Errorf("user %d starts at %v, want %v", tt.id, got, tt.want)
		}
	}
	ramp := p.Phases[0]
	if ramp.Name != RampUp || ramp.End != at(2499)+time.Second {
		t.Errorf("ramp phase %+v, want it to end one step after the last user", ramp)
	}
	// Users leave evenly over the ramp-down, the last to come first.
	end := ramp.End + 2*time.Hour
	if p.Users[2499].Stop != end+100*time.Second/2500 || p.Users[0].Stop != end+100*time.Second {
		t.Errorf("stops: last user %v, first user %v (steady ends %v)", p.Users[2499].Stop, p.Users[0].Stop, end)
	}
	if got := p.PhaseAt(end - time.Nanosecond).Name; got != Steady {
		t.Errorf("PhaseAt(just before the end of steady) = %s", got)
	}
	if got := p.PhaseAt(end).Name; got != RampDown {
		t.Errorf("PhaseAt(end of steady) = %s", got)
	}
}

// Segments 1/n .. n/n hold every user exactly once, with the same windows
// as the whole plan.
func TestSegmentsPartitionUsers(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, staged)
	whole := mustPlan(t, s, Whole)
	for _, n := range []int{1, 2, 3, 7} {
		seen := map[int]User{}
		for k := 1; k <= n; k++ {
			for _, u := range mustPlan(t, s, Segment{K: k, N: n}).Users {
				if _, dup := seen[u.ID]; dup {
					t.Fatalf("n=%d: user %d in two segments", n, u.ID)
				}
				seen[u.ID] = u
			}
		}
		if len(seen) != len(whole.Users) {
			t.Fatalf("n=%d: %d users in all segments, want %d", n, len(seen), len(whole.Users))
		}
		for _, u := range whole.Users {
			if seen[u.ID] != u {
				t.Fatalf("n=%d: user %d is %+v in its segment, %+v in the whole plan", n, u.ID, seen[u.ID], u)
			}
		}
	}
}

func TestParseSegment(t *testing.T) {
	t.Parallel()
	if s, err := ParseSegment("2/4"); err != nil || s != (Segment{K: 2, N: 4}) {
		t.Errorf("ParseSegment(2/4) = %v, %v", s, err)
	}
	for _, bad := range []string{"0/4", "5/4", "1/0", "a/b", "3", ""} {
		if _, err := ParseSegment(bad); err == nil {
			t.Errorf("ParseSegment(%q) accepted", bad)
		}
	}
}

const openSrc = `
users: 50
model: open
open: {rate: 1000/s}
phases:
  ramp_up: {duration: 10s}
  steady: 20s
  ramp_down: 10s
actions:
  - {name: a, path: /a, weight: 3}
  - {name: b, path: /b, weight: 1}
`

func collect(p *Plan, share func(int64) bool) (js []int64, ts []time.Duration, acts []int) {
	arr := p.Arrivals(share)
	for {
		j, at, a, ok := arr.Next()
		if !ok {
			return
		}
		js, ts, acts = append(js, j), append(ts, at), append(acts, a)
	}
}

func TestArrivalsFollowTheRateProfile(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, mustScenario(t, openSrc), Whole)
	// Λ = 1000*10/2 + 1000*20 + 1000*10/2 = 30,000 arrivals expected.
	js, ts, acts := collect(p, nil)
	if n := float64(len(js)); math.Abs(n-30_000) > 4*math.Sqrt(30_000) {
		t.Errorf("%d arrivals, want about 30,000", len(js))
	}
	perSecond := make([]int, 40)
	byAction := [2]int{}
	for i, at := range ts {
		if i > 0 && at < ts[i-1] {
			t.Fatalf("arrival %d at %v comes before the previous one at %v", i, at, ts[i-1])
		}
		if at < 0 || at >= 40*time.Second {
			t.Fatalf("arrival at %v, outside the 40 s plan", at)
		}
		perSecond[int(at/time.Second)]++
		byAction[acts[i]]++
	}
	// The rate rises linearly (second 5 of the ramp: about 550/s), holds at
	// 1000/s, then falls linearly.
	for sec, want := range map[int]float64{0: 50, 5: 550, 15: 1000, 25: 1000, 34: 550, 39: 50} {
		if got := float64(perSecond[sec]); math.Abs(got-want) > 5*math.Sqrt(want)+5 {
			t.Errorf("second %d: %v arrivals, want about %v", sec, got, want)
		}
	}
	if share := float64(byAction[0]) / float64(len(js)); math.Abs(share-0.75) > 0.02 {
		t.Errorf("action a got %.3f of arrivals, want 0.75 by weight", share)
	}
}

func TestSteppedRamp(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, "users: 8\nmodel: open\nopen: {rate: 400/s, arrivals: uniform}\nphases:\n  ramp_up: {duration: 40s, steps: 4}\n  steady: 10s\nactions: [{path: /}]\n")
	p := mustPlan(t, s, Whole)
	for _, tt := range []struct {
		at   time.Duration
		want float64
	}{{0, 100}, {9 * time.Second, 100}, {10 * time.Second, 200}, {35 * time.Second, 400}, {45 * time.Second, 400}} {
		if got := p.RateAt(tt.at); got != tt.want {
			t.Errorf("RateAt(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
	_, ts, _ := collect(p, nil)
	// Uniform arrivals: exactly Λ = 100*10+200*10+300*10+400*10+400*10 = 14,000.
	if len(ts) != 14_000 {
		t.Errorf("%d uniform arrivals, want 14,000", len(ts))
	}
	in := func(from, to time.Duration) int {
		n := 0
		for _, at := range ts {
			if at >= from && at < to {
				n++
			}
		}
		return n
	}
	if a, b := in(0, 10*time.Second), in(10*time.Second, 20*time.Second); a != 1000 || b != 2000 {
		t.Errorf("stairs hold %d and %d arrivals, want 1000 and 2000", a, b)
	}
}

// Segments and threads deal the same arrival sequence: together they hold
// every arrival once, at the same times with the same actions.
func TestArrivalSharesPartition(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, openSrc)
	wholeJ, wholeT, wholeA := collect(mustPlan(t, s, Whole), nil)
	type arr struct {
		at time.Duration
		a  int
	}
	seen := map[int64]arr{}
	for k := 1; k <= 3; k++ {
		p := mustPlan(t, s, Segment{K: k, N: 3})
		for th := 0; th < 2; th++ {
			js, ts, as := collect(p, p.Segment.ThreadShare(th, 2))
			for i, j := range js {
				if _, dup := seen[j]; dup {
					t.Fatalf("arrival %d dealt twice", j)
				}
				seen[j] = arr{ts[i], as[i]}
			}
		}
	}
	if len(seen) != len(wholeJ) {
		t.Fatalf("shares hold %d arrivals, the whole plan %d", len(seen), len(wholeJ))
	}
	for i, j := range wholeJ {
		if seen[j] != (arr{wholeT[i], wholeA[i]}) {
			t.Fatalf("arrival %d differs between its share and the whole plan", j)
		}
	}
}

func TestPerUserRatesAndSpeedup(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, "users: 1\nspeedup: 60\nmodel: open\nphases: {steady: 8h}\nactions:\n  - {name: send, rate: 12/8h}\n  - {name: read, rate: 36/8h}\n")
	p := mustPlan(t, s, Whole)
	r := NewRand(p.Users[0].Seed)
	var total time.Duration
	n := [2]int{}
	for i := 0; i < 48_000; i++ {
		gap, a := p.NextUserArrival(r)
		total += gap
		n[a]++
	}
	// 48 actions per 8 h at speedup 60: one every 10 s on average.
	if mean := total / 48_000; mean < 9800*time.Millisecond || mean > 10200*time.Millisecond {
		t.Errorf("mean gap %v, want about 10s", mean)
	}
	if share := float64(n[1]) / 48_000; math.Abs(share-0.75) > 0.01 {
		t.Errorf("read share %.3f, want 0.75", share)
	}
	if p.Think != 0 || p.Speedup != 60 {
		t.Errorf("think %v speedup %v", p.Think, p.Speedup)
	}
}

// Speedup divides the pacing as it divides think times.
func TestPacingAndSpeedup(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, "users: 1\nspeedup: 60\nclosed: {pacing: 15m}\nphases: {steady: 8h}\nactions: [{name: a}]\n")
	p := mustPlan(t, s, Whole)
	if g := p.Groups[0]; g.Pacing != 15*time.Second || g.Think != 0 {
		t.Errorf("pacing %v think %v, want 15s (15m at speedup 60) and 0", g.Pacing, g.Think)
	}
}

func TestUserSeedsAreStableAndDistinct(t *testing.T) {
	t.Parallel()
	seen := map[uint64]bool{}
	for id := 0; id < 10_000; id++ {
		s := UserSeed(1, id)
		if seen[s] {
			t.Fatalf("user %d repeats a seed", id)
		}
		seen[s] = true
	}
	// Stable: the same (seed, id) gives the same user in every version, so
	// a run can be reproduced from its seed (a change of the derivation
	// changes every user of every scenario: then change these too, and say
	// so in the release notes).
	if got := UserSeed(1, 7); got != 0x697b1fe3d1552d79 {
		t.Errorf("UserSeed(1, 7) = %#x, want 0x697b1fe3d1552d79", got)
	}
	if UserSeed(1, 7) == UserSeed(2, 7) {
		t.Error("user seeds do not depend on the scenario's seed")
	}
}

func TestChooserNeverPicksZeroWeight(t *testing.T) {
	t.Parallel()
	c := newChooser([]float64{0, 2, 0, 1, 0})
	for _, u := range []float64{0, 0.3, 0.6666, 0.6667, 0.9, 0.999999999, math.Nextafter(1, 0)} {
		if i := c.pick(u); i != 1 && i != 3 {
			t.Errorf("pick(%v) = %d, a zero-weight action", u, i)
		}
	}
	if c.pick(0.5) != 1 || c.pick(0.8) != 3 {
		t.Errorf("pick(0.5)=%d pick(0.8)=%d, want 1 and 3", c.pick(0.5), c.pick(0.8))
	}
}

func TestCountBoundPlan(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, mustScenario(t, "users: 10\nclosed: {iterations: 100000}\nactions: [{path: /one.html}]\n"), Whole)
	if !p.CountBound || p.End() != Open || len(p.Phases) != 1 || p.Phases[0].Name != Steady {
		t.Errorf("count-bound plan: %+v", p.Phases)
	}
	for _, u := range p.Users {
		if u.Start != 0 || u.Stop != Open {
			t.Errorf("user %+v should start at once and stop after its iterations", u)
		}
	}
	if p.MaxDuration != scenario.DefaultCountBound.D() {
		t.Errorf("max duration %v", p.MaxDuration)
	}
}

// closed.total: a count-bound plan whose count is shared; segments split
// it as they split arrivals, and their shares add up to the total.
func TestSharedTotalPlan(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, "users: 16\nclosed: {total: 2001}\nactions: [{path: /one.html}]\n")
	p := mustPlan(t, s, Whole)
	if !p.CountBound || p.Total != 2001 || p.Iterations != 0 || p.End() != Open {
		t.Errorf("shared-total plan: count-bound %v, total %d, iterations %d", p.CountBound, p.Total, p.Iterations)
	}
	for _, ws := range [][]int{nil, {1, 1, 1}, {1, 3, 2}} {
		var sum int64
		var shares []int64
		for k := 1; k <= 3; k++ {
			seg, err := NewSegment(k, 3, ws)
			if err != nil {
				t.Fatal(err)
			}
			shares = append(shares, mustPlan(t, s, seg).Total)
			sum += shares[k-1]
		}
		if sum != 2001 {
			t.Errorf("weights %v: shares %v add up to %d", ws, shares, sum)
		}
		if ws != nil && ws[1] == 3 && (shares[1] < 1000 || shares[1] > 1001) {
			t.Errorf("weights %v: segment 2 got %d of 2001", ws, shares[1])
		}
	}
	for _, src := range []string{
		"users: 2\nclosed: {total: 10, iterations: 5}\nactions: [{path: /}]\n",
		"users: 2\nclosed: {total: -1}\nactions: [{path: /}]\n",
	} {
		if _, err := scenario.Parse("t.yaml", []byte(src), []string{"web"}); err == nil || !strings.Contains(err.Error(), "closed.total") {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// Weighted segments 1,3: one user in four to the first, three to the
// second, and together the whole plan; arrivals likewise.
func TestWeightedSegments(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, openSrc)
	var segs []Segment
	for k := 1; k <= 2; k++ {
		seg, err := NewSegment(k, 2, []int{1, 3})
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, seg)
	}
	if segs[0].String() != "1/2@1,3" {
		t.Errorf("String() = %s", segs[0])
	}
	u0, u1 := len(mustPlan(t, s, segs[0]).Users), len(mustPlan(t, s, segs[1]).Users)
	if u0+u1 != 50 || u0 != 13 || u1 != 37 {
		t.Errorf("users %d + %d, want 13 + 37 of 50", u0, u1)
	}
	wholeJ, _, _ := collect(mustPlan(t, s, Whole), nil)
	seen := map[int64]bool{}
	perSeg := [2]int{}
	for i, seg := range segs {
		p := mustPlan(t, s, seg)
		for th := 0; th < 3; th++ {
			js, _, _ := collect(p, seg.ThreadShare(th, 3))
			for _, j := range js {
				if seen[j] {
					t.Fatalf("arrival %d dealt twice", j)
				}
				seen[j] = true
				perSeg[i]++
			}
		}
	}
	if len(seen) != len(wholeJ) {
		t.Errorf("weighted shares hold %d arrivals, the plan %d", len(seen), len(wholeJ))
	}
	if share := float64(perSeg[1]) / float64(len(wholeJ)); share < 0.74 || share > 0.76 {
		t.Errorf("segment 2 of weights 1,3 got %.3f of arrivals", share)
	}
	if _, err := NewSegment(1, 2, []int{1}); err == nil {
		t.Error("one weight for two segments accepted")
	}
	if _, err := ParseWeights("1,x"); err == nil {
		t.Error("bad weights accepted")
	}
	if seg, _ := NewSegment(1, 2, []int{1, 1}); seg != (Segment{K: 1, N: 2}) {
		t.Error("weights all 1 should be the plain segment")
	}
}

func TestGroupsPlan(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, `
phases: {steady: 1m, ramp_down: 10s}
groups:
  - {name: subs, users: 100, ramp_up: {every: 10ms}}
  - name: pubs
    users: 2
    start: 1s
    model: open
    actions: [{name: publish, rate: 10/s}, {name: ping, rate: 30/s}]
`)
	p := mustPlan(t, s, Whole)
	if len(p.Groups) != 2 || !p.Groups[0].Passive || p.Groups[1].First != 0 || p.Groups[1].N != 2 {
		t.Fatalf("groups %+v", p.Groups)
	}
	for _, u := range p.Users {
		switch {
		case u.ID < 100 && (u.Group != 0 || u.Start != time.Duration(u.ID)*10*time.Millisecond):
			t.Errorf("subscriber %+v", u)
		case u.ID >= 100 && (u.Group != 1 || u.Start != time.Second):
			t.Errorf("publisher %+v", u)
		}
	}
	if p.Phases[0].Name != RampUp || p.Phases[0].End != time.Second {
		t.Errorf("ramp-up %+v (subscribers take 1 s, publishers start at 1 s)", p.Phases[0])
	}
	r := NewRand(1)
	n := [2]int{}
	for i := 0; i < 4000; i++ {
		_, a := p.NextArrivalIn(1, r)
		n[a]++
	}
	if share := float64(n[1]) / 4000; share < 0.72 || share > 0.78 {
		t.Errorf("ping share %.3f, want 0.75 by rate", share)
	}
}
