package output

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// scrape serves e and returns the text page.
func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	return string(b)
}

func parse(t *testing.T, page string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, page)
	}
	return fams
}

// find returns the metric of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// The page holds the cumulative figures of the intervals given, exactly.
func TestExporterFigures(t *testing.T) {
	e := NewExporter(Run{Scenario: "web-static", Label: "A", Model: "closed", Engine: "epoll"})
	for _, iv := range knownIntervals() {
		e.Write(context.Background(), iv)
	}
	page := scrape(t, e)
	fams := parse(t, page)
	counter := func(name string, labels map[string]string) float64 {
		t.Helper()
		m := find(fams, name, labels)
		if m == nil {
			t.Fatalf("no %s%v in\n%s", name, labels, page)
		}
		return m.GetCounter().GetValue()
	}
	steady := map[string]string{"scenario": "web-static", "label": "A", "phase": "steady", "action": "page"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	// steady: 6+4 actions, 1 timeout, 2 skipped: 7 ok.
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{with(steady, "outcome", "ok"), 7},
		{with(steady, "outcome", "error", "class", "timeout"), 1},
		{with(steady, "outcome", "skipped"), 2},
		{with(steady, "phase", "ramp-down", "outcome", "ok"), 0}, // 1 action, 1 skipped
		{with(steady, "action", "post", "outcome", "ok"), 4},
	} {
		if got := counter("throng_actions_total", c.labels); got != c.want {
			t.Errorf("throng_actions_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := counter("throng_dropped_total", steady); got != 4 {
		t.Errorf("dropped %v, want 4", got)
	}
	if got := counter("throng_received_bytes_total", steady); got != 2000 {
		t.Errorf("bytes in %v, want 2000", got)
	}
	if got := counter("throng_client_bound_intervals_total", nil); got != 1 {
		t.Errorf("client bound %v", got)
	}
	if got := counter("throng_client_cpu_seconds_total", nil); got != 1.5 {
		t.Errorf("client cpu %v", got)
	}
	// Server counters: rates integrated over 3 one-second intervals;
	// gauges as last read; per-CPU series left out; no PID.
	if got := counter("throng_cpu_user_seconds_total", map[string]string{"source": "system"}); got != 0.75 {
		t.Errorf("system cpu %v, want 0.75", got)
	}
	if got := counter("throng_disk_reads_total", map[string]string{"source": "system", "dev": "vda"}); got != 30 {
		t.Errorf("disk reads %v, want 30", got)
	}
	if m := find(fams, "throng_memory_used_bytes", map[string]string{"source": "system"}); m == nil || m.GetGauge().GetValue() != 1e9 {
		t.Errorf("memory gauge %v", m)
	}
	comm, _ := os.ReadFile("/proc/1/comm")
	if got := counter("throng_process_cpu_user_seconds_total", map[string]string{"source": "process " + strings.TrimSpace(string(comm))}); got != 1.5 {
		t.Errorf("process cpu %v", got)
	}
	if strings.Contains(page, `source="process 1"`) || strings.Contains(page, `cpu="0"`) {
		t.Errorf("a PID or a per-CPU series on the page:\n%s", page)
	}
	// The latency histogram, steady page: 10 values.
	m := find(fams, "throng_latency_seconds", steady)
	if m == nil {
		t.Fatalf("no latency histogram:\n%s", page)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 10 || h.GetSampleSum() != (50+100+100+900+1000+2_000_000+99+101+250+251)/1e6 {
		t.Errorf("latency count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{0.0001: 4, 0.00025: 6, 0.0005: 7, 0.001: 9, 0.0025: 9, 1: 9, 2.5: 10, 60: 10}
	for _, b := range h.Bucket {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if !strings.Contains(page, `throng_run_info{engine="epoll",label="A",model="closed",scenario="web-static"} 1`) {
		t.Errorf("no run info:\n%s", page)
	}
}

// The native buckets hold every value, each in the bucket whose bounds
// hold it.
func TestExporterNativeBuckets(t *testing.T) {
	e := NewExporter(Run{Scenario: "s"})
	for _, iv := range knownIntervals() {
		e.Write(context.Background(), iv)
	}
	fams, err := e.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "throng_latency_seconds" {
			continue
		}
		for _, m := range f.Metric {
			h := m.GetHistogram()
			if h.GetSchema() != NativeSchema {
				t.Fatalf("schema %d", h.GetSchema())
			}
			total := h.GetZeroCount()
			var c int64
			for _, d := range h.PositiveDelta {
				c += d
				if c <= 0 {
					t.Errorf("empty or negative native bucket")
				}
				total += uint64(c)
			}
			if total != h.GetSampleCount() {
				t.Errorf("native buckets hold %d of %d values", total, h.GetSampleCount())
			}
		}
	}
	// Bucket placement: (2^((i-1)/8), 2^(i/8)].
	for _, v := range []float64{1e-6, 0.0001, 0.001, 0.5, 1, 2, 3.7} {
		i := nativeIndex(v)
		lo, hi := pow8(i-1), pow8(i)
		if !(v > lo && v <= hi) {
			t.Errorf("%v in bucket %d (%v, %v]", v, i, lo, hi)
		}
	}
}

// promtool check metrics finds nothing to say about the page.
func TestExporterPromtoolClean(t *testing.T) {
	promtool := testenv.RequireBinary(t, "promtool", testenv.PrometheusPaths...)
	e := NewExporter(Run{Scenario: "web-static", Label: "A \"quoted\"\nlabel", Model: "closed", Engine: "epoll"})
	empty := scrape(t, e)
	for _, iv := range knownIntervals() {
		e.Write(context.Background(), iv)
	}
	for i, page := range []string{empty, scrape(t, e)} {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(page)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil || out.Len() > 0 {
			t.Errorf("page %d: promtool check metrics: %v\n%s\npage:\n%s", i, err, out.String(), page)
		}
	}
}

// An action counts in the phase of its scheduled start: what an interval
// carries of another phase is counted there, as the result's summaries do.
func TestCarriedCountInTheirPhase(t *testing.T) {
	iv := knownInterval(0, "steady", []uint64{100, 200}, 0)
	var late result.ActionInterval
	late.Count = 5
	late.Latency.RecordN(1000, 5)
	iv.Carried = []result.PhaseActions{{Phase: "ramp-up", Actions: []result.ActionInterval{late}}}
	e := NewExporter(Run{Scenario: "s"})
	e.Write(context.Background(), NewInterval(0, t0, names, iv))
	fams := parse(t, scrape(t, e))
	if m := find(fams, "throng_actions_total", map[string]string{"phase": "ramp-up", "action": "page", "outcome": "ok"}); m == nil || m.GetCounter().GetValue() != 5 {
		t.Errorf("carried actions: %v", m)
	}
	if m := find(fams, "throng_actions_total", map[string]string{"phase": "steady", "action": "page", "outcome": "ok"}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("the interval's own: %v", m) // 2 actions, 1 skipped
	}
	if m := find(fams, "throng_latency_seconds", map[string]string{"phase": "ramp-up", "action": "page"}); m == nil || m.GetHistogram().GetSampleCount() != 5 {
		t.Errorf("carried latency: %v", m)
	}
}
