package report

import (
	"bytes"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/textfmt"
)

// renderers are the formats of every report table, with their golden
// files' extensions.
var renderers = []struct {
	ext    string
	render func(t *textfmt.Table, caption string) (string, error)
}{
	{"txt", func(t *textfmt.Table, _ string) (string, error) {
		var b bytes.Buffer
		err := t.Write(&b)
		return b.String(), err
	}},
	{"md", func(t *textfmt.Table, _ string) (string, error) {
		var b bytes.Buffer
		err := t.Markdown(&b)
		return b.String(), err
	}},
	{"csv", func(t *textfmt.Table, _ string) (string, error) {
		var b bytes.Buffer
		err := t.CSV(&b)
		return b.String(), err
	}},
	{"html", func(t *textfmt.Table, c string) (string, error) {
		var b bytes.Buffer
		err := t.HTML(&b, c)
		return b.String(), err
	}},
}

// modelRun is fakeRun with every optional phase row present: dropped
// arrivals and skipped actions.
func modelRun(reps int) *result.Run {
	run := fakeRun(reps)
	for r := range run.Repetitions {
		for i := range run.Repetitions[r].Summaries {
			s := &run.Repetitions[r].Summaries[i]
			s.Total.Dropped, s.Total.Skipped = uint64(2*i), uint64(3*i+1)
		}
	}
	return run
}

// reportTables are the tables of model.go built from modelRun.
func reportTables(t *testing.T) map[string]*textfmt.Table {
	run, reps := modelRun(1), modelRun(5)
	rep := &run.Repetitions[0]
	server, _, _ := serverTable(run, rep)
	_, actions, _ := actionTable(rep)
	out := map[string]*textfmt.Table{
		"phases": phaseTable(run, rep), "counters": server, "actions": actions, "repetitions": repetitionTable(reps),
	}
	for name, tab := range out {
		if tab == nil {
			t.Fatalf("table %s is empty for modelRun", name)
		}
	}
	return out
}

// TestTables checks each table of the report in every renderer against its
// golden file (testdata/tables/NAME.EXT; -update rewrites them): a row or
// a cell lost from the model fails the test of every renderer. Each
// renderer must also show every cell of the model.
func TestTables(t *testing.T) {
	for name, tab := range reportTables(t) {
		for _, r := range renderers {
			t.Run(name+"/"+r.ext, func(t *testing.T) {
				got, err := r.render(tab, name)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", "tables", name+"."+r.ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s (run with -update if the change is intended):\n%s", name, path, got)
				}
				for _, row := range tab.Rows {
					for _, c := range row {
						shown := c
						switch r.ext {
						case "html":
							shown = html.EscapeString(c)
						case "md":
							shown = textfmt.MarkdownEscape(c)
						}
						if !strings.Contains(got, shown) {
							t.Errorf("%s renderer lacks the cell %q", r.ext, c)
						}
					}
				}
			})
		}
	}
}

// TestPagesShowEveryRow: the terminal summary and the HTML page show every
// row of the model's tables — the drift of issue 23 (a "skipped" row in
// the text only; an errors row missing from the HTML unnoticed) fails here.
func TestPagesShowEveryRow(t *testing.T) {
	var text bytes.Buffer
	if err := Text(&text, modelRun(1)); err != nil {
		t.Fatal(err)
	}
	var reps bytes.Buffer
	if err := Text(&reps, modelRun(5)); err != nil {
		t.Fatal(err)
	}
	p1, p5 := page(t, modelRun(1)), page(t, modelRun(5))
	for name, tab := range reportTables(t) {
		txt, pg := text.String(), p1
		if name == "repetitions" {
			txt, pg = reps.String(), p5
		}
		for _, row := range tab.Rows[1:] {
			if !strings.Contains(txt, row[0]+"  ") {
				t.Errorf("the terminal summary lacks the %s row %q", name, row[0])
			}
			if !strings.Contains(pg, "<th scope=\"row\">"+esc(row[0])+"</th>") {
				t.Errorf("the HTML page lacks the %s row %q", name, row[0])
			}
		}
	}
	for _, want := range []string{"skipped (not attempted)", "dropped arrivals", "errors"} {
		if !strings.Contains(p1, ">"+want+"</th>") {
			t.Errorf("the HTML phase table lacks %q", want)
		}
	}
}

// TestTablesFormats: throng report --format markdown|csv prints the
// summary's tables from the model (goldens testdata/tables/run.md, .csv).
func TestTablesFormats(t *testing.T) {
	for _, f := range []struct{ format, ext string }{{"markdown", "md"}, {"csv", "csv"}} {
		var b bytes.Buffer
		if err := Tables(&b, modelRun(5), f.format); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "tables", "run."+f.ext)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from %s:\n%s", f.format, path, b.String())
		}
	}
	if err := Tables(&bytes.Buffer{}, modelRun(1), "xml"); err == nil {
		t.Error("no error for an unknown format")
	}
}
