package stats

import (
	"testing"
	"time"
)

// A trim far beyond the sample (a damaged result's 1e18) is fitted at
// once, not one step at a time.
func TestFitTrimHuge(t *testing.T) {
	for _, c := range []struct{ n, g, want int }{{0, 3, 0}, {1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {4, 1, 1}, {5, 2, 1}, {7, 1, 1}, {7, 9, 2}, {5, 1 << 60, 1}} {
		if got := fitTrim(c.n, c.g); got != c.want {
			t.Errorf("fitTrim(%d, %d) = %d, want %d", c.n, c.g, got, c.want)
		}
	}
	done := make(chan struct{})
	go func() { Trimmed([]float64{1, 2, 3}, 1<<62); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Trimmed with a trim of 2^62 did not return")
	}
}
