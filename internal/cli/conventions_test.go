package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/buildinfo"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/presets"
)

// TestVersion: `throng version` and `--version` name this build, and a
// run's result records the same build.
func TestVersion(t *testing.T) {
	in := buildinfo.Read()
	code, out, _ := throng(t, "version")
	if code != 0 || !strings.HasPrefix(out, "throng "+in.String()+"\n") || !strings.Contains(out, "go:      "+runtime.Version()) {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = throng(t, "--version")
	if code != 0 || out != "throng "+in.String()+"\n" {
		t.Errorf("--version: exit %d %q, want %q", code, out, "throng "+in.String())
	}
	res := filepath.Join(t.TempDir(), "r.json")
	if code, _, stderr := throng(t, "run", "web-static", "--users", "1", "--iterations", "10", "-q", "-o", res); code != 0 {
		t.Fatalf("run: exit %d %s", code, stderr)
	}
	run, err := result.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	v := run.Meta.Versions
	if v.Throng != in.Version || v.Commit != in.ShortCommit() || v.Date != in.Date || v.Go != runtime.Version() {
		t.Errorf("result versions %+v, build %+v", v, in)
	}
}

// TestOutDash: -o - puts the result JSON, and only it, on stdout; the
// summary goes to stderr; the file is written too.
func TestOutDash(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stdout, stderr := throng(t, "run", "web-static", "--users", "2", "--iterations", "50", "-q", "-o", "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var run result.Run
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&run); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%.300s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than the result")
	}
	if all := result.Find(run.Repetitions[0].Summaries, result.All); all == nil || all.Total.Count != 100 {
		t.Errorf("result on stdout: %+v", all)
	}
	if !strings.Contains(stderr, "100 actions") || !strings.Contains(stderr, "Result: results/") {
		t.Errorf("summary not on stderr:\n%s", stderr)
	}
	files, _ := filepath.Glob("results/web-static-*.json")
	if len(files) != 1 {
		t.Fatalf("result file: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if !bytes.Equal(b, []byte(stdout)) {
		t.Errorf("stdout differs from the result file")
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("a file named - was created")
	}
	code, _, stderr = throng(t, "run", "web-static", "web-static", "-o", "-")
	if code != ExitBadInput || !strings.Contains(stderr, "several scenarios") {
		t.Errorf("-o - with two scenarios: exit %d %s", code, stderr)
	}
}

// TestFlagTypesInHelp: every flag that takes a number, a duration or a
// rate says so in the help, not "string".
func TestFlagTypesInHelp(t *testing.T) {
	_, help, _ := throng(t, "run", "--help")
	for _, o := range overrides {
		want := regexp.MustCompile(`--` + regexp.QuoteMeta(o.flag) + ` ` + o.typ + `\s`)
		if !want.MatchString(help) {
			t.Errorf("help lacks --%s %s", o.flag, o.typ)
		}
		if o.typ == "string" && o.flag != "label" {
			t.Errorf("--%s is typed string", o.flag)
		}
	}
	for _, f := range []string{"--subscribers int", "--size size", "--engine kind"} {
		if !strings.Contains(help, f) {
			t.Errorf("help lacks %q", f)
		}
	}
	if strings.Contains(help, "--agents throng") {
		t.Errorf("a backquoted word became the --agents value's name:\n%s", help)
	}
}

// TestCompletion: the shell's completion offers presets where a scenario
// is asked for, and the engine kinds.
func TestCompletion(t *testing.T) {
	_, out, _ := throng(t, "__complete", "run", "web-")
	var want []string
	for _, n := range presets.Names() {
		if strings.HasPrefix(n, "web-") {
			want = append(want, n)
		}
	}
	got := completions(out)
	if len(want) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("run web-: %v, want %v", got, want)
	}
	_, out, _ = throng(t, "__complete", "run", "x.yaml", "--engine", "")
	if got := completions(out); strings.Join(got, ",") != strings.Join(engineKinds, ",") {
		t.Errorf("--engine: %v", got)
	}
	_, out, _ = throng(t, "__complete", "presets", "show", "")
	if got := completions(out); len(got) != len(presets.Names()) {
		t.Errorf("presets show: %v", got)
	}
}

// completions is the candidates of cobra's __complete output (one per line,
// then ":directive").
func completions(out string) []string {
	var c []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		c = append(c, strings.SplitN(l, "\t", 2)[0])
	}
	return c
}

// TestLiveLine: on a terminal the line fits its width (a wrapped line
// scrolls), and shows the share done and the time left when the end is
// known: by time, or by the iterations of a count-bound run.
func TestLiveLine(t *testing.T) {
	iv := func(start float64, count uint64) *result.Interval {
		return &result.Interval{StartS: start, DurationS: 1, Phase: "steady", ActiveUsers: 2,
			Actions: []result.ActionInterval{{Count: count}}}
	}
	timed := &plan.Plan{Phases: []plan.Phase{{Name: "steady", End: 10 * time.Second}}, Interval: time.Second,
		Actions: []plan.Action{{Name: "get"}}}
	for _, width := range []int{50, 80} {
		var b bytes.Buffer
		l := &live{w: &b, tty: true, plan: timed, runs: 1, width: func() int { return width }}
		l.interval(0, iv(4, 1000))
		line := strings.TrimPrefix(b.String(), "\r\x1b[K")
		if n := len([]rune(line)); n >= width || !strings.Contains(line, "50% ETA 5s") && width == 80 {
			t.Errorf("width %d: %q (%d columns)", width, line, n)
		}
	}
	counted := &plan.Plan{Phases: []plan.Phase{{Name: "steady", End: plan.Open}}, Interval: time.Second,
		Actions: []plan.Action{{Name: "get"}}, CountBound: true,
		Users: []plan.User{{ID: 0}, {ID: 1}}, Groups: []plan.Group{{Iterations: 50}}}
	var b bytes.Buffer
	l := &live{w: &b, plan: counted, runs: 1, width: func() int { return 0 }, planned: plannedIterations(counted)}
	l.interval(0, iv(0, 25))
	if !strings.Contains(b.String(), " 25% ETA 3s") {
		t.Errorf("count-bound progress: %q", b.String())
	}
}
