package cli

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	liveout "github.com/throng-io/throng/internal/output"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// runTotal is the count of every action of the run's only repetition
// (phase "all"), from its result file.
func runTotal(t *testing.T, path string) (*result.Run, uint64) {
	t.Helper()
	run, err := result.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Repetitions) != 1 {
		t.Fatalf("%d repetitions", len(run.Repetitions))
	}
	sums := run.Repetitions[0].Summaries
	all := sums[len(sums)-1]
	if all.Phase != result.All || all.Total.Count == 0 {
		t.Fatalf("last summary %q count %d", all.Phase, all.Total.Count)
	}
	return run, all.Total.Count
}

// lockedBuffer is a buffer written by a run and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A real Prometheus scrapes a run's --prometheus page every second; after
// the run (its page kept up by --prometheus-linger for a last scrape) a
// PromQL query over its HTTP API returns the run's count exactly. While
// the page lingers, the native histograms' counts equal the counters'.
func TestPrometheusScrapesRun(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	prom := testenv.Prometheus(t, testenv.PrometheusOptions{Targets: []string{addr}, NativeHistograms: true, RemoteWrite: true})
	if err := prom.WaitScraping(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	start := time.Now()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"run", "web-static", "--iterations", "0", "--duration", "3s", "--users", "2",
			"--prometheus", addr, "--prometheus-linger", "4s", "--output", "prometheus-rw=" + prom.WriteURL, "-q", "-o", out}, &stdout, &stderr)
	}()
	ctx := context.Background()
	query := func(q string) []testenv.PromSample {
		t.Helper()
		got, err := prom.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "--prometheus-linger") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // two scrapes of the final page
	counters := query(`sum(throng_actions_total{scenario="web-static",job="throng"})`)
	hists := query(`sum(histogram_count(throng_latency_seconds{scenario="web-static",job="throng"}))`)
	if len(counters) != 1 || len(hists) != 1 || counters[0].Value != hists[0].Value {
		t.Errorf("while lingering: counters %+v, native histograms %+v", counters, hists)
	}
	if code := <-done; code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if time.Since(start) < 7*time.Second {
		t.Errorf("the page was not kept up after the run (%s):\n%s", time.Since(start), stderr.String())
	}
	run, want := runTotal(t, out)
	if len(run.Outputs) != 2 || run.Outputs[0].Dropped || run.Outputs[0].Lost != 0 || run.Outputs[1].Dropped || run.Outputs[1].Lost != 0 {
		t.Errorf("outputs %+v", run.Outputs)
	}
	// The series are stale once the target is gone: read their last value.
	// Scraped series have job="throng", remote-written ones no job.
	got := query(`sum(max_over_time(throng_actions_total{scenario="web-static",job="throng"}[5m]))`)
	if len(got) != 1 || got[0].Value != float64(want) {
		t.Errorf("Prometheus scraped %+v actions; the result %d", got, want)
	}
	// Phase by phase, as the result's summaries count them (an action in
	// the phase of its scheduled start).
	for _, sum := range run.Repetitions[0].Summaries {
		if sum.Phase == result.All {
			continue
		}
		got := query(`sum(max_over_time(throng_actions_total{scenario="web-static",job="throng",phase="` + sum.Phase + `"}[5m]))`)
		if len(got) != 1 || got[0].Value != float64(sum.Total.Count) {
			t.Errorf("phase %s: Prometheus scraped %+v actions; the result %d", sum.Phase, got, sum.Total.Count)
		}
	}
	got = query(`sum(max_over_time(throng_actions_total{scenario="web-static",job=""}[5m]))`)
	if len(got) != 1 || got[0].Value != float64(want) {
		t.Errorf("Prometheus was remote-written %+v actions; the result %d", got, want)
	}
	got = query(`sum(max_over_time(throng_latency_seconds_count{scenario="web-static",job=""}[5m]))`)
	if len(got) != 1 || got[0].Value != float64(want) {
		t.Errorf("Prometheus was remote-written histograms of %+v actions; the result %d", got, want)
	}
	if len(hists) == 1 && hists[0].Value != float64(want) {
		t.Errorf("native histograms counted %v actions; the result %d", hists[0].Value, want)
	}
	// No PID anywhere in the labels.
	if got := query(`count by (source) (last_over_time({__name__=~"throng_.*",source=~".*[0-9]+.*"}[5m]))`); len(got) != 0 {
		t.Errorf("series labelled with a number (a PID?): %+v", got)
	}
}

// --output csv=FILE writes one row per interval and action, and --output
// otlp=URL sends OpenTelemetry metrics (to an in-process OTLP/HTTP
// receiver here) whose counts add up to the result's.
func TestOutputsCSVAndOTLP(t *testing.T) {
	var mu sync.Mutex
	var last *colmetricpb.ExportMetricsServiceRequest
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		last = req
		mu.Unlock()
	}))
	defer otlp.Close()
	dir := t.TempDir()
	out, csvPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv")
	code, stdout, stderr := throng(t, "run", "web-static", "--iterations", "0", "--duration", "2s", "--users", "2", "--interval", "500ms",
		"--output", "csv="+csvPath, "--output", "otlp="+otlp.URL+"/v1/metrics", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, want := runTotal(t, out)
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(liveout.CSVColumns, ",") {
		t.Fatalf("header %v", rows[0])
	}
	var sum uint64
	byPhase := map[string]uint64{}
	intervals := map[string]bool{}
	for _, r := range rows[1:] {
		n, err := strconv.ParseUint(r[7], 10, 64)
		if err != nil || r[6] != "page" {
			t.Fatalf("row %v: %v", r, err)
		}
		sum += n
		byPhase[r[5]] += n
		intervals[r[0]+"/"+r[1]] = true
	}
	if sum != want || uint64(len(intervals)) != run.Outputs[0].Delivered || len(intervals) < 4 {
		t.Errorf("CSV: %d intervals counting %d actions; result %d actions, outputs %+v", len(intervals), sum, want, run.Outputs)
	}
	for _, s := range run.Repetitions[0].Summaries {
		if s.Phase != result.All && byPhase[s.Phase] != s.Total.Count {
			t.Errorf("CSV: phase %s counts %d; the result %d", s.Phase, byPhase[s.Phase], s.Total.Count)
		}
	}
	if !strings.Contains(stdout, "ok       csv="+csvPath) || !strings.Contains(stdout, "ok       otlp="+otlp.URL) {
		t.Errorf("summary does not say where the outputs went:\n%s", stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	var otlpSum float64
	if last != nil {
		for _, rm := range last.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "throng.actions" {
						for _, dp := range m.GetSum().DataPoints {
							otlpSum += dp.GetAsDouble()
						}
					}
				}
			}
		}
	}
	if otlpSum != float64(want) || run.Outputs[1].Dropped {
		t.Errorf("OTLP counted %v actions; the result %d; outputs %+v", otlpSum, want, run.Outputs)
	}
}

// Bad --output values are bad input, with the flag named.
func TestOutputBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", "influx=http://127.0.0.1:1"}, `unknown output "influx"`},
		{[]string{"--output", "csv"}, "want KIND=TARGET"},
		{[]string{"--output", "otlp=127.0.0.1:4318"}, "want an http:// or https:// URL"},
		{[]string{"--prometheus-linger", "5s"}, "--prometheus-linger needs --prometheus"},
	} {
		code, _, stderr := throng(t, append([]string{"run", "web-static", "-q"}, c.args...)...)
		if code != ExitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, stderr)
		}
	}
	code, _, stderr := throng(t, "run", "web-static", "-q", "--output", "csv="+filepath.Join(t.TempDir(), "no", "such", "dir.csv"))
	if code != ExitFailure || !strings.Contains(stderr, "--output csv=") {
		t.Errorf("unwritable csv: exit %d %s", code, stderr)
	}
}

// An output that never answers and one that fails are dropped and
// counted; the run keeps its length, and a healthy output (CSV) still
// gets every interval, adding up to the result's count.
func TestOutputsSlowAndFailingDoNotSlowTheRun(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no space left", http.StatusInternalServerError)
	}))
	defer fail.Close()
	dir := t.TempDir()
	out, csvPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv")
	start := time.Now()
	code, stdout, stderr := throng(t, "run", "web-static", "--iterations", "0", "--duration", "3s", "--users", "2", "--interval", "25ms",
		"--output", "prometheus-rw="+hang.URL+"/api/v1/write", "--output", "otlp="+fail.URL+"/v1/metrics",
		"--output", "csv="+csvPath, "-q", "-o", out)
	wall := time.Since(start)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, want := runTotal(t, out)
	rep := run.Repetitions[0]
	// The hanging output is dropped when it falls behind, so the end does
	// not wait for it.
	if rep.ElapsedS < 3 || rep.ElapsedS > 3.5 || wall > 3*time.Second+outputsCloseTimeout {
		t.Errorf("run %.2f s, wall %s", rep.ElapsedS, wall)
	}
	if len(run.Outputs) != 3 {
		t.Fatalf("outputs %+v", run.Outputs)
	}
	rw, otlp, csvOut := run.Outputs[0], run.Outputs[1], run.Outputs[2]
	if !rw.Dropped || rw.Delivered != 0 || rw.Lost <= liveout.DefaultQueue || !strings.Contains(rw.Reason, "behind") {
		t.Errorf("hanging output: %+v", rw)
	}
	if !otlp.Dropped || otlp.Delivered != 0 || otlp.Lost != rw.Lost || !strings.Contains(otlp.Reason, "500") {
		t.Errorf("failing output: %+v", otlp)
	}
	if csvOut.Dropped || csvOut.Lost != 0 || csvOut.Delivered != rw.Lost {
		t.Errorf("csv output: %+v", csvOut)
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	var sum uint64
	for _, r := range rows[1:] {
		n, _ := strconv.ParseUint(r[7], 10, 64)
		sum += n
	}
	if sum != want {
		t.Errorf("CSV counts %d, result %d", sum, want)
	}
	for _, w := range []string{"DROPPED  prometheus-rw=" + hang.URL, "DROPPED  otlp=" + fail.URL} {
		if !strings.Contains(stdout, w) {
			t.Errorf("summary lacks %q:\n%s", w, stdout)
		}
	}
}
