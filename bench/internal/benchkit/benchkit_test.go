package benchkit

import "testing"

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	in := []float64{3, 1, 2}
	Median(in)
	if in[0] != 3 {
		t.Error("Median sorted its argument")
	}
}

func TestMedianOfAndRatios(t *testing.T) {
	type s struct{ v float64 }
	if got := MedianOf([]s{{3}, {1}, {2}, {10}}, func(x s) float64 { return x.v }); got != 2.5 {
		t.Errorf("MedianOf = %g, want 2.5", got)
	}
	if got := Ratios([]float64{1.125, 0.5}, 2); got != "[1.12 0.50]" && got != "[1.13 0.50]" {
		t.Errorf("Ratios = %q", got)
	}
}
