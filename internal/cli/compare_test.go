package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/compare"
)

// compareFiles runs web-static twice (10 and 20 users' worth of load from
// 2 and 4 users) and cuts a copy of the second's journal before its end.
func compareFiles(t *testing.T) (a, b, cut string) {
	t.Helper()
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, r := range []struct{ out, users, label string }{{a, "2", "A"}, {b, "4", "B"}} {
		if code, stdout, stderr := throng(t, "run", "web-static", "--users", r.users, "--iterations", "300", "--label", r.label, "-q", "-o", r.out); code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
		}
	}
	// A journal whose run was killed: the end records are gone.
	j, err := os.ReadFile(filepath.Join(dir, "b.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(j)), "\n") {
		if !strings.Contains(line, `"kind":"end"`) && !strings.Contains(line, `"kind":"repetition_end"`) {
			kept = append(kept, line)
		}
	}
	cut = filepath.Join(dir, "cut.journal.jsonl")
	os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	return a, b, cut
}

func TestCompareCommand(t *testing.T) {
	a, b, _ := compareFiles(t)

	code, out, stderr := throng(t, "compare", a, b)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"Comparing 2 configurations: A, B (steady phase)\n", "  A: web-static · " + a, "  B: web-static · " + b,
		"steady · client ", " A ", " B ", "change", "95% CI", "verdict", "actions/s", "latency p99", "client-bound intervals",
		"cannot judge: 1 run a side", "Verdicts: the unit of replication is the repetition",
		"Configuration differences:\n  users: 2 → 4\n",
		"A and B ran different loads (users 2 vs 4)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = throng(t, "compare", a, b, "--format", "markdown")
	if code != 0 || !strings.Contains(out, "| steady · client | A | B | change | 95% CI | verdict |\n|:---|---:|---:|---:|---:|:---|\n| actions/s |") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}

	code, out, stderr = throng(t, "compare", a, b, "--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || recs[0][6] != "A" || recs[0][9] != "B" || recs[1][1] != "rate_per_s" {
		t.Errorf("csv: exit %d %v\n%s", code, err, out)
	}
	if !strings.Contains(stderr, "warning: A and B ran different loads") {
		t.Errorf("csv warnings not on stderr: %q", stderr)
	}

	code, out, _ = throng(t, "compare", a, b, "--format", "json", "--phase", "all")
	var c compare.Comparison
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.Schema != compare.Schema || c.Phases[0] != "all" || len(c.Runs) != 2 {
		t.Errorf("json: exit %d %v\n%s", code, err, out)
	}
}

// A journal of a killed run is read and the warning says what is missing.
func TestComparePartialJournal(t *testing.T) {
	a, _, cut := compareFiles(t)
	code, out, stderr := throng(t, "compare", a, cut)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"PARTIAL", "B is a partial run: the run was cut short (killed or crashed)", "Missing: the end of the steady phase"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if code, _, stderr := throng(t, "run", "web-static", "--users", "1", "--iterations", "50", "-q", "-o", a); code != 0 {
		t.Fatal(stderr)
	}
	garbage := filepath.Join(dir, "g.json")
	os.WriteFile(garbage, []byte("{not json"), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one file", []string{"compare", a}, ExitBadInput, "compare needs at least two result files, got 1"},
		{"unknown phase", []string{"compare", a, a, "--phase", "stedy"}, ExitBadInput, `--phase: unknown phase "stedy": want one of ramp-up, steady, ramp-down, all`},
		{"unknown format", []string{"compare", a, a, "--format", "xml"}, ExitBadInput, `--format "xml": want one of text, markdown, csv, json`},
		{"missing file", []string{"compare", a, filepath.Join(dir, "none.json")}, ExitFailure, "none.json: no such result file or journal"},
		{"garbage", []string{"compare", a, garbage}, ExitBadInput, garbage + ": not a throng result"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := throng(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q", code, tt.code, stderr, tt.want)
			}
		})
	}
	// The same run twice compares, with no warning of a difference (a busy
	// machine may still make it client-bound) and no verdict: one run a
	// side cannot be judged.
	code, out, _ := throng(t, "compare", a, a, "--format", "json")
	var c compare.Comparison
	json.Unmarshal([]byte(out), &c)
	if code != 0 || c.Runs[1].Label == c.Runs[0].Label {
		t.Errorf("same file twice: exit %d %+v", code, c.Runs)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "different") {
			t.Errorf("same file twice: %s", w)
		}
	}
	for _, r := range c.Rows {
		if v := r.Diffs[1].Verdict; v != compare.CannotJudge && v != compare.NoData && v != compare.Same {
			t.Errorf("%s: %s comparing a run with itself", r.ID, v)
		}
	}
	var buf bytes.Buffer
	if compare.Render(&buf, &c, "text") != nil || !strings.Contains(buf.String(), "web-static (a.json) #2") {
		t.Errorf("labels of the same file twice:\n%s", buf.String())
	}
}
