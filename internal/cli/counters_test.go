package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/targets/web"
	"github.com/throng-io/throng/internal/testenv"
)

// A run against the real nginx, reading nginx's process group by PID and
// the machine through the real node_exporter: the server rows are there,
// named as the studies name them (docs/studies.md), and they add up.
func TestServerCountersAgainstNginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	ne := testenv.NodeExporter(t)
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("users: 4\ninterval: 500ms\nphases: {steady: 2s}\nactions: [{path: /one.html}]\n"), 0o644)
	run := runResult(t, "run", file, "--target", ng.URL, "--server-process", strconv.Itoa(ng.PID),
		"--node-exporter", ne.URL+"/metrics", "--engine", "epoll", "--threads", "1")
	s := result.Find(run.Repetitions[0].Summaries, "steady")
	row := func(id string) float64 {
		r := s.FindRow(id)
		if r == nil {
			t.Fatalf("no %s row; rows: %+v", id, s.Server)
		}
		return float64(r.Mean)
	}
	// The machine rows come from node_exporter when it is given.
	if r := s.FindRow("cpu_pct"); r == nil || !strings.HasPrefix(r.Source, "node ") {
		t.Errorf("cpu_pct from %+v", r)
	}
	if v := row("cpu_pct"); v <= 5 || v > 100 {
		t.Errorf("%% processor time %.1f under load", v)
	}
	if v := row("context_switches"); v < 1000 {
		t.Errorf("context switches/s %.0f", v)
	}
	// Loopback carries every request and response: at least the bytes throng
	// counted itself.
	if in := row("net_in_kbit") * 1000 / 8; in < s.Total.BytesInPerS {
		t.Errorf("network in %.0f B/s, below the %.0f B/s throng received", in, s.Total.BytesInPerS)
	}
	// nginx: one master and one worker; the worker works.
	if v := row("server_processes"); v != 2 {
		t.Errorf("server processes %.1f, want 2 (master and worker)", v)
	}
	if v := row("server_cpu_pct"); v <= 1 || v > 105 {
		t.Errorf("nginx used %.1f%% of a core", v)
	}
	if v := row("server_rss_mb"); v < 1 || v > 500 {
		t.Errorf("nginx RSS %.1f MB", v)
	}
	// Cost: nginx's own CPU per request, in a plausible range on loopback.
	if v := row("cpu_ms_per_action"); v <= 0.001 || v > 1 {
		t.Errorf("server CPU-ms per action %.4f", v)
	}
	if r := s.FindRow("cpu_ms_per_action"); r.Source != "process "+strconv.Itoa(ng.PID) {
		t.Errorf("cost read from %q, want the server process", r.Source)
	}
	// The result says which process the selection chose.
	for _, c := range s.Counters {
		if c.Source == "process "+strconv.Itoa(ng.PID) && (len(c.Roots()) != 1 || c.Roots()[0] != ng.PID) {
			t.Errorf("%s matched %v", c.Source, c.Roots())
		}
	}
	for _, c := range s.Counters {
		if c.Down > 0 {
			t.Errorf("source %s down in %d intervals: %v", c.Source, c.Down, c.Errors)
		}
	}
}

// A source that fails (a process that does not exist, an exporter that is
// down) is a gap in the report, never a stopped run.
func TestCounterGapsDoNotStopTheRun(t *testing.T) {
	srv, err := web.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--target", srv.URL(), "--iterations", "3000", "--users", "2", "--engine", "goroutines",
		"--server-process", "no-such-process-name", "--node-exporter", "http://127.0.0.1:9/metrics", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Gap: process no-such-process-name did not answer", "Gap: node http://127.0.0.1:9/metrics did not answer"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestThresholdsExitCodeAndJUnit(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	code, stdout, stderr := throng(t, "run", "web-static", "--iterations", "500", "--users", "2", "-q", "-o", filepath.Join(dir, "a.json"),
		"--threshold", "error_rate == 0", "--threshold", "p99 < 1ms", "--threshold", "rate > 1000000000/s", "--junit", junit)
	if code != ExitThresholds {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitThresholds, stdout, stderr)
	}
	if !strings.Contains(stdout, "pass  steady: error_rate == 0") || !strings.Contains(stdout, "FAIL  steady: rate > 1000000000/s") {
		t.Errorf("threshold lines:\n%s", stdout)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(b, &suites) != nil || len(suites.Suites) != 1 || suites.Suites[0].Tests != 3 || suites.Suites[0].Failures < 1 {
		t.Errorf("junit %v %+v\n%s", err, suites, b)
	}
	// All passing: exit 0. A bad threshold: bad input, positioned.
	code, _, stderr = throng(t, "run", "web-static", "--iterations", "200", "--users", "2", "-q", "-o", filepath.Join(dir, "b.json"), "--threshold", "errors == 0")
	if code != 0 {
		t.Errorf("passing thresholds: exit %d %s", code, stderr)
	}
	code, _, stderr = throng(t, "run", "web-static", "--threshold", "p59 < 1s")
	if code != ExitBadInput || !strings.Contains(stderr, `flag --threshold: thresholds[0]: `) || !strings.Contains(stderr, `did you mean "p95"?`) {
		t.Errorf("bad threshold: exit %d %s", code, stderr)
	}
}
