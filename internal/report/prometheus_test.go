package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// promSample is one parsed sample line.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition checks text against the exposition format 0.0.4 by
// hand — HELP and TYPE at most once per metric and before its samples, a
// metric's samples together, valid names, label values with only the
// escapes \\ \" \n, float values, no series twice — and returns the
// samples.
func parseExposition(t *testing.T, text string) []promSample {
	t.Helper()
	if text != "" && !strings.HasSuffix(text, "\n") {
		t.Error("the page does not end with a line feed")
	}
	typed, helped, done := map[string]bool{}, map[string]bool{}, map[string]bool{}
	series := map[string]bool{}
	current := ""
	var out []promSample
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) {
			t.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kw, rest, _ := strings.Cut(rest, " ")
			name, arg, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) {
				fail("bad metric name %q", name)
			}
			switch kw {
			case "TYPE":
				if typed[name] || done[name] || slices.ContainsFunc(out, func(s promSample) bool { return s.name == name }) {
					fail("TYPE of %s again or after its samples", name)
				}
				if !slices.Contains([]string{"counter", "gauge", "summary", "histogram", "untyped"}, arg) {
					fail("bad type %q", arg)
				}
				typed[name] = true
			case "HELP":
				if helped[name] {
					fail("HELP of %s again", name)
				}
				if strings.Contains(strings.ReplaceAll(arg, `\\`, ""), `\`) && !strings.Contains(arg, `\n`) {
					fail("bad escape in HELP")
				}
				helped[name] = true
			default:
				fail("unknown comment keyword %q", kw)
			}
			if name != current {
				done[current] = current != ""
				current = name
			}
			continue
		}
		s := promSample{labels: map[string]string{}}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			fail("no value")
			continue
		}
		s.name = line[:i]
		if !metricName.MatchString(s.name) {
			fail("bad metric name %q", s.name)
		}
		if !typed[s.name] {
			fail("sample of %s before its TYPE", s.name)
		}
		if s.name != current {
			if done[s.name] {
				fail("samples of %s are not together", s.name)
			}
			done[current] = true
			current = s.name
		}
		rest := line[i:]
		if strings.HasPrefix(rest, "{") {
			rest = rest[1:]
			for !strings.HasPrefix(rest, "}") {
				eq := strings.Index(rest, `="`)
				if eq < 0 {
					fail("label without =\"")
					break
				}
				ln := rest[:eq]
				if !labelName.MatchString(ln) {
					fail("bad label name %q", ln)
				}
				rest = rest[eq+2:]
				var v strings.Builder
				closed := false
				for j := 0; j < len(rest); j++ {
					switch c := rest[j]; c {
					case '\\':
						if j+1 >= len(rest) {
							fail("escape at the end")
							break
						}
						switch rest[j+1] {
						case '\\':
							v.WriteByte('\\')
						case '"':
							v.WriteByte('"')
						case 'n':
							v.WriteByte('\n')
						default:
							fail("bad escape \\%c", rest[j+1])
						}
						j++
					case '"':
						rest, closed = rest[j+1:], true
					default:
						v.WriteByte(c)
					}
					if closed {
						break
					}
				}
				if !closed {
					fail("label value not closed")
					break
				}
				if _, dup := s.labels[ln]; dup {
					fail("label %s twice", ln)
				}
				s.labels[ln] = v.String()
				rest = strings.TrimPrefix(rest, ",")
			}
			rest = strings.TrimPrefix(rest, "}")
		}
		fields := strings.Fields(rest)
		if !strings.HasPrefix(rest, " ") || len(fields) < 1 || len(fields) > 2 {
			fail("want one space, a value and an optional timestamp")
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil && fields[0] != "NaN" && fields[0] != "+Inf" && fields[0] != "-Inf" {
			fail("bad value %q", fields[0])
		}
		s.value = v
		key := s.name + fmt.Sprint(s.labels)
		if series[key] {
			fail("series twice")
		}
		series[key] = true
		out = append(out, s)
	}
	return out
}

func find(samples []promSample, name string, labels ...string) (float64, bool) {
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && s.labels[labels[i]] == labels[i+1]
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// testInterval has two actions (one with a name to escape), errors of two
// classes, and counters whose names need escaping.
func testInterval(phase string, scale uint64) (*result.Meta, *result.Interval) {
	meta := &result.Meta{Scenario: "demo", Label: `nginx "1.22"`, Model: "closed", Engine: "epoll",
		Actions: []string{"page", `se"ar\ch` + "\n"}}
	iv := &result.Interval{StartS: 10, DurationS: 2, Phase: phase, ActiveUsers: 7, Client: result.Client{CPUCores: 0.75, Bound: true}}
	for a := range 2 {
		var s metrics.ActionSnapshot
		for k := uint64(0); k < 1000*scale; k++ {
			s.Latency.Record(100 + k%5000 + uint64(a)*1000)
		}
		s.Count, s.Dropped = 1000*scale, 4
		ai := result.FromSnapshot(&s)
		if a == 0 && scale == 1 {
			ai.Errors = map[string]uint64{"status_5xx": 10, "timeout": 2}
		}
		iv.Actions = append(iv.Actions, ai)
	}
	iv.Counters = []sampler.SourceValues{
		{Name: "system", Up: true, Values: map[string]float64{"cpu_user_seconds_total{cpu=0}": 0.25, "context_switches_total": 8300}},
		{Name: `node http://h:9100/"x"`, Up: false, Err: "refused"},
	}
	return meta, iv
}

func TestExporterServesTheLatestInterval(t *testing.T) {
	e := NewExporter()
	srv := httptest.NewServer(e)
	defer srv.Close()
	first := parseExposition(t, scrape(t, srv.URL))
	if v, ok := find(first, "throng_intervals_total"); !ok || v != 0 || len(first) != 1 {
		t.Errorf("before any interval: %+v", first)
	}

	meta, iv := testInterval("steady", 1)
	e.Update(meta, iv)
	text := scrape(t, srv.URL)
	got := parseExposition(t, text)
	search := `se"ar\ch` + "\n"
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"throng_intervals_total", nil, 1},
		{"throng_interval_seconds", nil, 2},
		{"throng_elapsed_seconds", nil, 12},
		{"throng_run_info", []string{"scenario", "demo", "label", `nginx "1.22"`, "model", "closed", "engine", "epoll"}, 1},
		{"throng_phase_info", []string{"phase", "steady"}, 1},
		{"throng_active_users", nil, 7},
		{"throng_client_cpu_cores", nil, 0.75},
		{"throng_client_bound", nil, 1},
		{"throng_actions_per_second", []string{"action", "page"}, 500},
		{"throng_actions_per_second", []string{"action", search}, 500},
		{"throng_errors_per_second", []string{"action", "page", "class", "status_5xx"}, 5},
		{"throng_errors_per_second", []string{"action", "page", "class", "timeout"}, 1},
		{"throng_dropped_per_second", []string{"action", "page"}, 2},
		{"throng_counter", []string{"source", "system", "series", "cpu_user_seconds_total{cpu=0}"}, 0.25},
		{"throng_counter", []string{"source", "system", "series", "context_switches_total"}, 8300},
		{"throng_counter_source_up", []string{"source", `node http://h:9100/"x"`}, 0},
	} {
		if v, ok := find(got, tt.name, tt.labels...); !ok || v != tt.want {
			t.Errorf("%s%q = %v (found %v), want %v", tt.name, tt.labels, v, ok, tt.want)
		}
	}
	// Quantiles are the interval's own histogram's, in seconds.
	for i, action := range meta.Actions {
		for _, q := range quantiles {
			want := float64(iv.Actions[i].Latency.Quantile(q.q)) / 1e6
			if v, ok := find(got, "throng_latency_seconds", "action", action, "quantile", q.label); !ok || v != want {
				t.Errorf("%s p%s = %v, want %v", action, q.label, v, want)
			}
		}
	}
	if _, ok := find(got, "throng_counter", "source", `node http://h:9100/"x"`, "series", "context_switches_total"); ok {
		t.Error("a source that was down has values")
	}
	if !strings.Contains(text, `throng_actions_per_second{action="se\"ar\\ch\n"} 500`+"\n") {
		t.Errorf("label value not escaped as expected:\n%s", text)
	}

	// The next interval replaces it: another phase, no errors (the classes
	// seen stay at 0), quantiles of that interval alone.
	meta, iv2 := testInterval("ramp-down", 3)
	e.Update(meta, iv2)
	got = parseExposition(t, scrape(t, srv.URL))
	if _, ok := find(got, "throng_phase_info", "phase", "steady"); ok {
		t.Error("the old phase is still served")
	}
	if v, _ := find(got, "throng_errors_per_second", "action", "page", "class", "timeout"); v != 0 {
		t.Errorf("errors of a class seen before: %v, want 0", v)
	}
	if v, _ := find(got, "throng_latency_seconds", "action", "page", "quantile", "0.99"); v != float64(iv2.Actions[0].Latency.Quantile(0.99))/1e6 {
		t.Errorf("p99 %v is not the new interval's", v)
	}
	if v, _ := find(got, "throng_intervals_total"); v != 2 {
		t.Errorf("intervals_total %v", v)
	}
}

func TestExporterEdgeCases(t *testing.T) {
	e := NewExporter()
	// No meta, an empty action, a zero-length interval.
	e.Update(nil, &result.Interval{Phase: "steady", Actions: make([]result.ActionInterval, 1)})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	got := parseExposition(t, rec.Body.String())
	if v, ok := find(got, "throng_actions_per_second", "action", "#1"); !ok || !math.IsNaN(v) {
		t.Errorf("zero-length interval rate %v %v", v, ok)
	}
	if _, ok := find(got, "throng_latency_seconds", "action", "#1", "quantile", "0.5"); ok {
		t.Error("quantiles of an empty histogram")
	}
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/metrics", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "0" {
		t.Errorf("HEAD: %d body %d", rec.Code, rec.Body.Len())
	}
	for _, tt := range []struct {
		v    float64
		want string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {1e-7, "1e-07"}, {8300, "8300"}} {
		if got := promFloat(tt.v); got != tt.want {
			t.Errorf("promFloat(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// Updates and scrapes at once (run with -race): every page is whole.
func TestExporterConcurrent(t *testing.T) {
	e := NewExporter()
	srv := httptest.NewServer(e)
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			meta, iv := testInterval([]string{"steady", "ramp-down"}[i%2], 1)
			e.Update(meta, iv)
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				sc := bufio.NewScanner(resp.Body)
				phases := 0
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "throng_phase_info{") {
						phases++
					}
				}
				resp.Body.Close()
				if phases > 1 {
					t.Errorf("%d phases on one page", phases)
				}
			}
		}()
	}
	wg.Wait()
}
