package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// madeUpSearch is the record of a search (capacity.Decide) of a made-up
// server whose p95 reaches 1 s at truth users (p95 = 1 s · (N/truth)^8,
// known to ±2 %; throughput N/2 up to its knee at 0.8·truth), written to a file.
func madeUpSearch(t *testing.T, slo string, truth float64, path string) *capacity.Record {
	t.Helper()
	th, err := threshold.Parse(slo)
	if err != nil {
		t.Fatal(err)
	}
	cfg := capacity.Config{SLOs: []threshold.Threshold{th}, Dimension: capacity.Users, Min: 100, Max: 100000,
		StepDuration: 30 * time.Second, NoWarmUp: true, Precision: 0.03}
	var steps []capacity.Step
	for range 40 {
		d := capacity.Decide(cfg, steps)
		if d.Done {
			rec := capacity.NewRecord(cfg, steps, nil, *d.Answer)
			rec.Scenario = "made-up"
			if err := capacity.WriteRecordFile(path, &rec); err != nil {
				t.Fatal(err)
			}
			return &rec
		}
		x := d.Next.Load / truth
		p95 := 1000 * math.Pow(x, 8)
		steps = append(steps, capacity.Step{Request: d.Next, Elapsed: d.Next.Duration, Counters: capacity.NaNCounters(),
			SLOs: []capacity.Figure{{Value: p95, HalfWidth: 0.02 * p95}}, Throughput: math.Min(d.Next.Load/2, 0.4*truth), Users: d.Next.Load,
			Count: 1000, Latency: result.Latency{MeanMs: p95 / 2, P50Ms: p95 / 3, P95Ms: p95, P99Ms: 1.5 * p95}})
	}
	t.Fatal("the search did not end")
	return nil
}

// throng report prints a capacity search, and --html draws it: both
// charts, the SLO's limit, the interval and the knee; throng compare says
// how much more B carries, against made-up servers whose capacities are
// 6,200 and 8,556 users (38 % more).
func TestCapacityReportAndCompare(t *testing.T) {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	a, b := madeUpSearch(t, "p95 < 1s", 6200, pa), madeUpSearch(t, "p95 < 1s", 8556, pb)
	for _, r := range []*capacity.Record{a, b} {
		if r.Status != capacity.Found {
			t.Fatalf("the made-up search ended %s: %s", r.Status, r.Statement)
		}
	}
	code, out, stderr := throng(t, "report", pa)
	if code != 0 || !strings.Contains(out, a.Statement) || !strings.Contains(out, "capacity search · made-up") {
		t.Fatalf("report: exit %d\n%s%s", code, out, stderr)
	}
	html := filepath.Join(dir, "a.html")
	if code, out, stderr = throng(t, "report", "--html", html, pa); code != 0 {
		t.Fatalf("report --html: exit %d\n%s%s", code, out, stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Throughput against the load", "Latency against the load", "SLO p95 &lt; 1s", "95 % CI", "<svg"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
	if a.Knee == nil || !strings.Contains(string(page), "<title>knee</title>") {
		t.Errorf("the knee (%v) is not drawn", a.Knee)
	}
	code, out, stderr = throng(t, "compare", pa, pb)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("\n%s", out)
	ratio := float64(b.Max.Value) / float64(a.Max.Value)
	want := fmt.Sprintf("B carries %.0f %% more users at the same SLO (p95 < 1s): ×%.3g", 100*(ratio-1), ratio)
	if math.Abs(ratio-1.38) > 0.05 || !strings.Contains(out, want) {
		t.Fatalf("ratio %.3f, want 1.38 ± 0.05 (the searches' precision); output %q, want %q", ratio, out, want)
	}
	// The other way round: fewer; and a record against itself: the same.
	if _, out, _ = throng(t, "compare", pb, pa); !strings.Contains(out, "% fewer users at the same SLO") {
		t.Errorf("B against A: %q", out)
	}
	if _, out, _ = throng(t, "compare", pa, pa); !strings.Contains(out, "no difference detectable") {
		t.Errorf("A against itself: %q", out)
	}
	// Not the same question, a run's result beside a search: refused.
	other := filepath.Join(dir, "c.json")
	madeUpSearch(t, "p95 < 2s", 6200, other)
	if code, _, stderr = throng(t, "compare", pa, other); code != ExitBadInput || !strings.Contains(stderr, "not the same question") {
		t.Errorf("different SLOs: exit %d, %s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"schema": "throng.run/1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = throng(t, "compare", pa, filepath.Join(dir, "x.json")); code != ExitBadInput || !strings.Contains(stderr, "not a capacity search") {
		t.Errorf("a search beside a run: exit %d, %s", code, stderr)
	}
}
