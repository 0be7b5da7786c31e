package report

import (
	"math"
	"testing"
)

func wave(n int) []point {
	pts := make([]point, n)
	for i := range pts {
		pts[i] = point{float64(i), 100 + 10*math.Sin(float64(i)/50)}
	}
	return pts
}

func TestLTTBLength(t *testing.T) {
	for _, tt := range []struct{ in, n, want int }{
		{7200, 800, 800}, {801, 800, 800}, {800, 800, 800}, {10, 800, 10}, {1000, 3, 3}, {1000, 1, 3}, {0, 800, 0},
	} {
		got := lttb(wave(tt.in), tt.n)
		if len(got) != tt.want {
			t.Errorf("lttb(%d points, %d) kept %d, want %d", tt.in, tt.n, len(got), tt.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].X <= got[i-1].X {
				t.Fatalf("lttb(%d, %d): x not increasing at %d: %v then %v", tt.in, tt.n, i, got[i-1], got[i])
			}
		}
	}
}

func TestLTTBKeepsEnds(t *testing.T) {
	pts := wave(5000)
	got := lttb(pts, 100)
	if got[0] != pts[0] || got[len(got)-1] != pts[len(pts)-1] {
		t.Errorf("ends not kept: %v .. %v, want %v .. %v", got[0], got[len(got)-1], pts[0], pts[len(pts)-1])
	}
}

// A one-interval spike (a stall) must survive downsampling, and so must a
// one-interval dip: averaging would flatten both.
func TestLTTBKeepsExtremes(t *testing.T) {
	pts := wave(7200)
	pts[3333].Y = 5000
	pts[6001].Y = -300
	got := lttb(pts, 800)
	var spike, dip bool
	for _, p := range got {
		spike = spike || p == pts[3333]
		dip = dip || p == pts[6001]
	}
	if !spike || !dip {
		t.Errorf("spike kept %v, dip kept %v", spike, dip)
	}
}

// Every point kept is a point of the input (LTTB selects, never invents).
func TestLTTBSelects(t *testing.T) {
	pts := wave(3000)
	in := map[point]bool{}
	for _, p := range pts {
		in[p] = true
	}
	for _, p := range lttb(pts, 200) {
		if !in[p] {
			t.Fatalf("%v is not an input point", p)
		}
	}
}

// Gaps (a counter source that did not answer) stay gaps, and each side is
// downsampled.
func TestLTTBGaps(t *testing.T) {
	pts := wave(4000)
	for i := 1000; i < 1010; i++ {
		pts[i].Y = math.NaN()
	}
	got := lttb(pts, 400)
	gaps := 0
	for _, p := range got {
		if math.IsNaN(p.Y) {
			gaps++
			if p.X != 1010 {
				t.Errorf("gap marker at x=%v, want 1010 (where the line resumes)", p.X)
			}
		}
	}
	if gaps != 1 || len(got) > 410 || len(got) < 390 {
		t.Errorf("%d points, %d gaps; want about 400 and 1", len(got), gaps)
	}
	if got[0] != pts[0] || got[len(got)-1] != pts[len(pts)-1] {
		t.Errorf("ends not kept")
	}
	if last := got[len(got)-1]; last.X != 3999 {
		t.Errorf("last %v", last)
	}
}
