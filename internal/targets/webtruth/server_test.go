package webtruth

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// A request arriving in a stall waits until the stall ends; outside, it
// does not wait.
func TestStallWait(t *testing.T) {
	c := Config{StallEvery: 2 * time.Second, StallFor: 200 * time.Millisecond, StallAt: 1800 * time.Millisecond}
	a := time.Unix(1000, 0)
	for _, tc := range []struct {
		at, want time.Duration
	}{
		{-time.Second, 0}, {0, 0}, {1799 * time.Millisecond, 0}, {1800 * time.Millisecond, 200 * time.Millisecond},
		{1950 * time.Millisecond, 50 * time.Millisecond}, {2 * time.Second, 0}, {5900 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := c.StallWait(a, a.Add(tc.at)); got != tc.want {
			t.Errorf("arrival at %v: waits %v, want %v", tc.at, got, tc.want)
		}
	}
	if (Config{Delay: Dist{Kind: "fixed"}, StallEvery: time.Second, StallFor: time.Second, StallAt: time.Millisecond}).validate() == nil {
		t.Error("a stall that overflows its period was accepted")
	}
}

// The server holds each request its delay, records what it held, and the
// nearest-rank quantile is the one throng's histograms use.
func TestServerRecordsWhatItHeld(t *testing.T) {
	s, err := Start("127.0.0.1:0", Config{Delay: Dist{Kind: "uniform", Min: 20 * time.Millisecond, Max: 40 * time.Millisecond}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	for range 5 {
		resp, err := http.Get(s.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	reqs, lost := s.Requests(t0, time.Now())
	if len(reqs) != 5 || lost != 0 {
		t.Fatalf("%d requests recorded, %d lost", len(reqs), lost)
	}
	for _, r := range reqs {
		if r.Held < 20*time.Millisecond || r.Held > 60*time.Millisecond || r.Stalled != 0 {
			t.Errorf("held %v (stalled %v), want 20-40 ms", r.Held, r.Stalled)
		}
	}
	ranked := []Request{{Held: 3}, {Held: 1}, {Held: 2}, {Held: 4}}
	if Quantile(ranked, 0.5) != 2 || Quantile(ranked, 0.75) != 3 || Quantile(ranked, 0.99) != 4 {
		t.Errorf("quantiles %v %v %v", Quantile(ranked, 0.5), Quantile(ranked, 0.75), Quantile(ranked, 0.99))
	}
}
