package capacitytruth

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// W requests at once are served together in S; one more waits S longer.
// 2W+1 requests sent at once take 3 service times for the last, never
// fewer: the workers bound the concurrency.
func TestWorkersBoundConcurrency(t *testing.T) {
	const w, s = 2, 100 * time.Millisecond
	srv, err := Start("127.0.0.1:0", Config{Workers: w, Service: s})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if got := srv.Capacity(); got != 20 {
		t.Fatalf("capacity %g, want 2/0.1s = 20/s", got)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	took := make([]time.Duration, 2*w+1)
	start := time.Now()
	for i := range took {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(srv.URL() + "/")
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "x" {
				t.Errorf("body %q", body)
			}
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	var last time.Duration
	for _, d := range took {
		last = max(last, d)
	}
	if last < 3*s {
		t.Errorf("the last of %d requests took %s, want at least 3×%s with %d workers", 2*w+1, last, s, w)
	}
	if srv.Served() != 2*w+1 || srv.MeanHold() < s {
		t.Errorf("served %d, mean hold %s; want %d and at least %s", srv.Served(), srv.MeanHold(), 2*w+1, s)
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := Start("127.0.0.1:0", Config{Workers: 0, Service: time.Millisecond}); err == nil {
		t.Error("no workers: want an error")
	}
}
