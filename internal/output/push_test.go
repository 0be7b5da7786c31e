package output

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/throng-io/throng/internal/testenv"
)

// nowIntervals are the known intervals stamped with recent times (a
// Prometheus receiver refuses samples far in the past).
func nowIntervals() []*Interval {
	ivs := knownIntervals()
	start := time.Now().Add(-time.Duration(len(ivs)) * time.Second)
	for i, iv := range ivs {
		iv.End = start.Add(time.Duration(i+1) * time.Second)
	}
	return ivs
}

// Remote write into a real Prometheus: a query returns the counts sent.
func TestRemoteWriteIntoPrometheus(t *testing.T) {
	prom := testenv.Prometheus(t, testenv.PrometheusOptions{RemoteWrite: true})
	rw := NewRemoteWrite(prom.WriteURL, Run{Scenario: "rw-test", Label: "A"})
	ctx := context.Background()
	for _, iv := range nowIntervals() {
		if err := rw.Write(ctx, iv); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]float64{
		// steady page 10 + ramp-down page 1 + post 2×3
		`sum(throng_actions_total{scenario="rw-test"})`:                                               17,
		`sum(throng_actions_total{scenario="rw-test",outcome="error",class="timeout"})`:               1,
		`throng_latency_seconds_count{scenario="rw-test",phase="steady",action="page"}`:               10,
		`throng_latency_seconds_bucket{scenario="rw-test",phase="steady",action="page",le="0.00025"}`: 6,
	} {
		got, err := prom.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Value != want {
			t.Errorf("%s = %+v, want %v", q, got, want)
		}
	}
}

// OTLP through the SDK's exporter into an in-process OTLP/HTTP receiver:
// the request decodes, and its cumulative sums and histograms hold the
// counts sent.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var last *colmetricpb.ExportMetricsServiceRequest
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil || r.URL.Path != "/v1/metrics" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		last, requests = req, requests+1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Write(out)
	}))
	defer srv.Close()
	ctx := context.Background()
	o, err := NewOTLP(ctx, srv.URL+"/v1/metrics", Run{Scenario: "otlp-test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range knownIntervals() {
		if err := o.Write(ctx, iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != 3 || last == nil {
		t.Fatalf("%d requests", requests)
	}
	var actions float64
	var histCount uint64
	found := map[string]bool{}
	for _, rm := range last.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				found[m.Name] = true
				switch m.Name {
				case "throng.actions":
					s := m.GetSum()
					if !s.IsMonotonic || s.AggregationTemporality.String() != "AGGREGATION_TEMPORALITY_CUMULATIVE" {
						t.Errorf("throng.actions: %v", s)
					}
					for _, dp := range s.DataPoints {
						actions += dp.GetAsDouble()
					}
				case "throng.latency":
					if m.Unit != "s" {
						t.Errorf("latency unit %q", m.Unit)
					}
					for _, dp := range m.GetHistogram().DataPoints {
						histCount += dp.Count
						var sum uint64
						for _, c := range dp.BucketCounts {
							sum += c
						}
						if sum != dp.Count || len(dp.BucketCounts) != len(LatencyBounds)+1 {
							t.Errorf("histogram buckets %v hold %d of %d", dp.BucketCounts, sum, dp.Count)
						}
					}
				}
			}
		}
	}
	if actions != 17 || histCount != 17 || !found["throng.process_cpu_user"] {
		t.Errorf("OTLP: %v actions, %d in histograms, metrics %v", actions, histCount, found)
	}
}

// The remote-write token comes from the environment, never the URL.
func TestRemoteWriteToken(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if r.Header.Get("Content-Encoding") != "snappy" {
			http.Error(w, "not snappy", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	t.Setenv(RemoteWriteTokenEnv, "s3cret")
	rw := NewRemoteWrite(srv.URL, Run{Scenario: "s"})
	if err := rw.Write(context.Background(), nowIntervals()[0]); err != nil || auth != "Bearer s3cret" {
		t.Errorf("write: %v, Authorization %q", err, auth)
	}
	for _, v := range []string{"prometheus-rw=http://u:s3cret@127.0.0.1:9090/api/v1/write", "otlp=http://u:s3cret@127.0.0.1:4318/v1/metrics"} {
		_, err := ParseSpec(v)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "no user or password") {
			t.Errorf("%s: %v", v, err)
		}
	}
}
