package output

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
)

// busyInterval is an interval of a busy web run: 3 actions with latencies
// spread over 2 decades (a few hundred HDR buckets each) and a system
// source of 40 series.
func busyInterval() *result.Interval {
	iv := knownInterval(0, "steady", nil, 0)
	iv.Actions = make([]result.ActionInterval, 3)
	for a := range iv.Actions {
		var h metrics.Hist
		for v := uint64(10); v < 100_000; v = v*101/100 + 1 {
			h.RecordN(v, 50)
		}
		iv.Actions[a] = result.ActionInterval{Count: h.N, Latency: h, Errors: map[string]uint64{"timeout": 3}}
	}
	for i := range 40 {
		iv.Counters[0].Values["disk_reads_total{dev=d"+itoa(i)+"}"] = float64(i)
	}
	return iv
}

// The cost of one interval in each output, in the output's goroutine (the
// run's own goroutine only copies the interval: BenchmarkCopy).
func BenchmarkCopy(b *testing.B) {
	iv := busyInterval()
	for b.Loop() {
		NewInterval(0, t0, []string{"a", "b", "c"}, iv)
	}
}

func BenchmarkExporterScrape(b *testing.B) {
	e := NewExporter(Run{Scenario: "s"})
	e.Write(context.Background(), NewInterval(0, t0, []string{"a", "b", "c"}, busyInterval()))
	h := e.Handler()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	}
}

func BenchmarkSinks(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	ctx := context.Background()
	csvSink, _ := NewCSV(filepath.Join(b.TempDir(), "o.csv"))
	otlp, _ := NewOTLP(ctx, srv.URL+"/v1/metrics", Run{Scenario: "s"})
	for _, c := range []struct {
		name string
		s    Sink
	}{{"csv", csvSink}, {"remote-write", NewRemoteWrite(srv.URL, Run{Scenario: "s"})}, {"otlp", otlp}} {
		b.Run(c.name, func(b *testing.B) {
			iv := NewInterval(0, time.Now(), []string{"a", "b", "c"}, busyInterval())
			for b.Loop() {
				if err := c.s.Write(ctx, iv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
