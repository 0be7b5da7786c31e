package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// webScenario writes a short closed web scenario: 2 users for 2 s of
// steady state, recorded every 200 ms.
func webScenario(t *testing.T, dir, name, target string, keepalive bool) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	src := fmt.Sprintf(`name: %s
users: 2
model: closed
interval: 200ms
phases:
  steady: 2s
target: %s
web:
  keepalive: %v
actions:
  - name: page
    path: /one.html
`, name, target, keepalive)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runMany runs throng with several scenarios into dir and reads the
// comparison it wrote.
func runManyCompare(t *testing.T, dir string, args ...string) (*compare.Comparison, string) {
	t.Helper()
	code, stdout, stderr := throng(t, append(append([]string{"run"}, args...), "-q", "-o", dir)...)
	if code != ExitOK && code != ExitPartial {
		t.Fatalf("throng run %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c compare.Comparison
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c, stdout
}

func verdictOf(t *testing.T, c *compare.Comparison, id string) compare.Verdict {
	t.Helper()
	for _, r := range c.Rows {
		if r.ID == id {
			return r.Diffs[1].Verdict
		}
	}
	t.Fatalf("no row %s", id)
	return ""
}

// A/A against the real nginx: the same scenario twice, interleaved, five
// repetitions each: no row is called different; the repetitions ran
// alternately; each configuration has its result with its repetitions.
func TestRunManyAANginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	dir := t.TempDir()
	a := webScenario(t, dir, "same", ng.URL, true)
	out := filepath.Join(dir, "aa")
	c, stdout := runManyCompare(t, out, a, a, "--runs", "5", "--trim", "1")
	for _, r := range c.Rows {
		switch v := r.Diffs[1].Verdict; v {
		case compare.Better, compare.Worse, compare.Higher, compare.Lower:
			t.Errorf("A/A: %s %s (%v vs %v, p_adj %v)", r.ID, v, r.Values[0].Value, r.Values[1].Value, r.Diffs[1].PAdj)
		}
	}
	if c.Tested < 10 || len(c.Runs) != 2 || c.Runs[0].Label != "same-1" || c.Runs[1].Label != "same-2" {
		t.Errorf("tested %d, runs %+v", c.Tested, c.Runs)
	}
	if !strings.Contains(stdout, "Comparing 2 configurations: same-1, same-2") {
		t.Errorf("stdout:\n%s", stdout)
	}
	// Interleaved: A1 B1 A2 B2 ... by their start times.
	var starts [2][]time.Time
	for i, name := range []string{"same-1", "same-2"} {
		run, err := result.ReadFile(filepath.Join(out, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Repetitions) != 5 || run.Meta.Runs != 5 || run.Meta.Trim != 1 || run.Aggregate == nil || run.Valid == nil {
			t.Fatalf("%s: %d repetitions, meta runs %d trim %d", name, len(run.Repetitions), run.Meta.Runs, run.Meta.Trim)
		}
		for k, rep := range run.Repetitions {
			if rep.Index != k || rep.Validity == nil {
				t.Errorf("%s repetition %d: index %d validity %v", name, k, rep.Index, rep.Validity)
			}
			starts[i] = append(starts[i], rep.StartedAt)
		}
	}
	for k := 0; k < 5; k++ {
		if !starts[0][k].Before(starts[1][k]) || (k > 0 && !starts[1][k-1].Before(starts[0][k])) {
			t.Errorf("not interleaved at repetition %d: %v", k+1, starts)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "repetitions")); !os.IsNotExist(err) {
		t.Errorf("the per-repetition files were left: %v", err)
	}
}

// A/B against nginx: a new connection for every request costs more than
// keep-alive: fewer requests per second, higher latency, both called.
func TestRunManyKeepAliveNginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	dir := t.TempDir()
	a := webScenario(t, dir, "keepalive", ng.URL, true)
	b := webScenario(t, dir, "close", ng.URL, false)
	c, stdout := runManyCompare(t, filepath.Join(dir, "ab"), a, b, "--runs", "4", "--trim", "0")
	for _, id := range []string{"rate_per_s", "latency_mean_ms"} {
		if v := verdictOf(t, c, id); v != compare.Worse {
			t.Errorf("%s: %s, want worse\n%s", id, v, stdout)
		}
	}
	found := false
	for _, d := range c.Config {
		found = found || d.Key == "web.keepalive" && strings.Join(d.Values, ",") == "true,false"
	}
	if !found {
		t.Errorf("configuration differences %+v", c.Config)
	}
}

// A server slowed by a known amount: an in-process HTTP server that
// answers after 10 ms, then after 11 ms (10 % slower). Every request's
// latency grows by about 1 ms: the p50 is called worse, and the measured
// change is within a few points of +10 %.
func TestRunManySlowedServer(t *testing.T) {
	delay := func(d time.Duration) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			w.Write([]byte("x"))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	dir := t.TempDir()
	a := webScenario(t, dir, "fast", delay(10*time.Millisecond), true)
	b := webScenario(t, dir, "slow", delay(11*time.Millisecond), true)
	c, stdout := runManyCompare(t, filepath.Join(dir, "slowed"), a, b, "--runs", "5", "--trim", "1")
	if v := verdictOf(t, c, "latency_p50_ms"); v != compare.Worse {
		t.Errorf("p50: %s, want worse\n%s", v, stdout)
	}
	for _, r := range c.Rows {
		if r.ID == "latency_p50_ms" {
			if ch := float64(r.Diffs[1].Change); ch < 5 || ch > 15 {
				t.Errorf("p50 change %+.1f%%, want about +10%%", ch)
			}
		}
		if r.Diffs[1].Verdict == compare.Better {
			t.Errorf("%s called better for a slower server", r.ID)
		}
	}
}
