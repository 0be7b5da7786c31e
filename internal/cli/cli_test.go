package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/presets"
)

// throng runs the command in-process and returns its exit code and output.
func throng(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Every preset decodes, validates, and compiles with its driver.
func TestPresetsCompile(t *testing.T) {
	names := presets.Names()
	if len(names) < 2 {
		t.Fatalf("presets: %v", names)
	}
	for _, name := range names {
		s, err := loadScenario(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Description == "" {
			t.Errorf("%s has no description", name)
		}
		// A target of the preset's family where nothing listens: no embedded
		// server needed, and nothing is run.
		placeholder := map[string]string{"web": "http://127.0.0.1:9", "files": "file://" + t.TempDir(),
			"mail": "imap://127.0.0.1:9", "pubsub": "nats://127.0.0.1:9"}[s.Driver]
		if placeholder == "" {
			t.Fatalf("%s: no placeholder target for family %q", name, s.Driver)
		}
		job, err := prepareArg(t, nil, name, setting("target", placeholder))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(job.Actions) != len(s.Actions) || job.Kind == "" {
			t.Errorf("%s: %d actions compiled, engine %q", name, len(job.Actions), job.Kind)
		}
	}
}

// web-static is the IIS study (docs/studies.md): 10 sessions x 100,000
// requests of a 1-byte page.
func TestWebStaticIsTheIISStudy(t *testing.T) {
	s, err := loadScenario("web-static")
	if err != nil {
		t.Fatal(err)
	}
	if s.Users != 10 || s.Closed.Iterations != 100_000 || s.Model != "closed" || s.Closed.Think != 0 || s.Target != "embedded" {
		t.Errorf("web-static: users %d iterations %d model %s think %v target %s", s.Users, s.Closed.Iterations, s.Model, s.Closed.Think, s.Target)
	}
}

func TestPresetsCommand(t *testing.T) {
	code, out, _ := throng(t, "presets")
	if code != 0 || !strings.Contains(out, "web-static") || !strings.Contains(out, "web-open") || !strings.Contains(out, "The IIS study (docs/studies.md)") || !strings.Contains(out, "Full scale: throng run domino-r6 --users 3000") {
		t.Errorf("presets: %d\n%s", code, out)
	}
	code, out, _ = throng(t, "presets", "show", "web-static")
	_, src, _ := presets.Source("web-static")
	if code != 0 || out != string(src) {
		t.Errorf("presets show: %d\n%s", code, out)
	}
	code, _, errs := throng(t, "presets", "show", "nope")
	if code != ExitBadInput || !strings.Contains(errs, `no preset named "nope"`) {
		t.Errorf("presets show nope: %d %s", code, errs)
	}
}

// --total shares one count among the users (and clears the preset's
// iterations per user); the result and the report say so.
func TestRunSharedTotal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--users", "3", "--total", "1001", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if all := result.Find(run.Repetitions[0].Summaries, result.All); all.Total.Count != 1001 || run.Meta.Total != 1001 || run.Meta.Iterations != 0 {
		t.Errorf("count %d, meta total %d iterations %d", all.Total.Count, run.Meta.Total, run.Meta.Iterations)
	}
	if !strings.Contains(stdout, "1,001 iterations shared by the users") {
		t.Errorf("summary does not say the count is shared:\n%s", stdout)
	}
	if code, _, stderr := throng(t, "run", "web-static", "--total", "10", "--iterations", "5", "-q", "-o", out); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("--total with --iterations: exit %d, %s", code, stderr)
	}
}

func TestRunAgainstEmbeddedTarget(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--users", "3", "--iterations", "500", "--engine", "goroutines", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if all.Total.Count != 1500 || all.Total.Errors != 0 || run.Partial {
		t.Errorf("count %d errors %d partial %v", all.Total.Count, all.Total.Errors, run.Partial)
	}
	if run.Meta.Users != 3 || run.Meta.Iterations != 500 || run.Meta.Overrides["users"] != "3" || run.Meta.Engine != "goroutines" {
		t.Errorf("meta %+v", run.Meta)
	}
	for _, want := range []string{"web-static", "actions/s", "latency p99", "1,500 actions"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	// report re-prints the same summary from the result file.
	code, again, _ := throng(t, "report", out)
	if code != 0 || !strings.Contains(again, "1,500 actions") {
		t.Errorf("report: %d\n%s", code, again)
	}
	// Its tables alone, as Markdown and as CSV.
	if code, md, _ := throng(t, "report", out, "--format", "markdown"); code != 0 || !strings.Contains(md, "**By phase**") || !regexp.MustCompile(`\n\| actions \|.* 1,500 \|\n`).MatchString(md) {
		t.Errorf("report --format markdown: %d\n%s", code, md)
	}
	if code, csv, _ := throng(t, "report", out, "--format", "csv"); code != 0 || !strings.HasPrefix(csv, "By phase\n,") || !regexp.MustCompile(`\nactions,.*"1,500"\n`).MatchString(csv) {
		t.Errorf("report --format csv: %d\n%s", code, csv)
	}
	if _, err := os.Stat(result.JournalPath(out)); err != nil {
		t.Errorf("journal: %v", err)
	}
}

func TestRepetitionsTrimmedMean(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--users", "2", "--iterations", "100", "--runs", "5", "--trim", "1", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, _ := result.ReadFile(out)
	if len(run.Repetitions) != 5 || run.Aggregate == nil || len(run.Aggregate.Kept) != 3 || run.Aggregate.RankedBy != "elapsed_s" {
		t.Fatalf("repetitions %d aggregate %+v", len(run.Repetitions), run.Aggregate)
	}
	if !strings.Contains(stdout, "mean of 3") || !strings.Contains(stdout, "run 5") {
		t.Errorf("table:\n%s", stdout)
	}
}

func TestBadInputExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("users: -2\nclosed: {iterations: 1, thinktime: 1s}\nactions: [{path: /}]\n"), 0o644)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"malformed scenario, every problem", []string{"run", bad}, ExitBadInput,
			[]string{bad + ":1:1: users: users is -2", bad + ":2:25: closed.thinktime: unknown key"}},
		{"missing preset", []string{"run", "web-statik"}, ExitBadInput, []string{`no scenario file or preset named "web-statik"`}},
		{"missing file", []string{"run", "nope/x.yaml"}, ExitBadInput, []string{"nope/x.yaml", "no such file"}},
		{"bad flag value", []string{"run", "web-static", "--duration", "soon"}, ExitBadInput, []string{`flag --duration: phases.steady: bad duration "soon"`}},
		{"impossible flag value", []string{"run", "web-static", "--users", "0"}, ExitBadInput, []string{"flag --users: users: users is missing or 0"}},
		{"bad segment", []string{"run", "web-static", "--segment", "3/2"}, ExitBadInput, []string{"--segment"}},
		{"unknown engine", []string{"run", "web-static", "--engine", "turbo"}, ExitBadInput, []string{`engine "turbo" is not one of`}},
		{"unwritable output", []string{"run", "web-static", "--iterations", "5", "-q", "-o", filepath.Join(notDir, "r.json")}, ExitFailure,
			[]string{"cannot create the results directory"}},
		{"refused target", []string{"run", "web-static", "--target", "http://127.0.0.1:9", "-q", "-o", filepath.Join(dir, "r.json")}, ExitFailure,
			[]string{"connection refused", "is the server running?"}},
		{"unresolvable target", []string{"run", "web-static", "--target", "http://no-such-host.invalid", "-q", "-o", filepath.Join(dir, "r.json")}, ExitFailure,
			[]string{"no-such-host.invalid", "is the server running?"}},
		{"report of nothing", []string{"report", filepath.Join(dir, "none.json")}, ExitFailure, []string{"no such result file or journal"}},
		{"report of garbage", []string{"report", notDir}, ExitBadInput, []string{notDir + ": not a throng result"}},
		{"unknown report format", []string{"report", notDir, "--format", "xml"}, ExitBadInput, []string{`--format "xml": want one of text, markdown, csv`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := throng(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("a stack trace:\n%s", stderr)
			}
		})
	}
}

// A token given through the environment reaches the server but never the
// result, the journal or the output.
func TestSecretsStayOutOfResults(t *testing.T) {
	t.Setenv("THRONG_TEST_TOKEN", "tok-5ecret-value")
	dir := t.TempDir()
	file := filepath.Join(dir, "auth.yaml")
	os.WriteFile(file, []byte("users: 1\nclosed: {iterations: 20}\nweb: {headers: {Authorization: \"Bearer ${THRONG_TEST_TOKEN}\"}}\nactions: [{path: /echo, method: POST, body: \"${THRONG_TEST_TOKEN}\"}]\n"), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := throng(t, "run", file, "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, _ := result.ReadFile(out)
	// The server echoed the body: the token went out (20 requests).
	if tot := result.Find(run.Repetitions[0].Summaries, result.All).Total; tot.Count != 20 || tot.BytesInPerS == 0 {
		t.Fatalf("count %d", tot.Count)
	}
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(text, "tok-5ecret-value") {
			t.Errorf("the token is in %s", name)
		}
	}
	for _, f := range []string{out, result.JournalPath(out)} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("tok-5ecret-value")) {
			t.Errorf("the token is in %s", f)
		}
		if !bytes.Contains(b, []byte("${THRONG_TEST_TOKEN}")) {
			t.Errorf("%s lacks the scenario as written", f)
		}
	}
	os.Unsetenv("THRONG_TEST_TOKEN")
	code, _, stderr = throng(t, "run", file, "-q", "-o", out)
	if code != ExitBadInput || !strings.Contains(stderr, "THRONG_TEST_TOKEN is not set") {
		t.Errorf("unset variable: exit %d %s", code, stderr)
	}
}
