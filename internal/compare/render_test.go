package compare

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

// sample is a comparison of two runs that differ in rate and latency, the
// second one also in users (a warning).
func sample(t *testing.T) *Comparison {
	a := fakeRun(fakeMeta("nginx"), steady(12, 1000, 2000, 8000))
	m := fakeMeta("apache|2")
	m.Users = 20
	b := fakeRun(m, steady(12, 2000, 4000, 9000))
	return mustCompare(t, "", a, b)
}

func render(t *testing.T, c *Comparison, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, c, format); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestText(t *testing.T) {
	out := render(t, sample(t), "text")
	for _, want := range []string{
		"Comparing 2 runs, steady phase\n",
		"  nginx: demo · dir/run1.json · 10 users · closed · epoll (1 thread) · vm, 2 cores · 12 intervals sampled\n",
		"client                     nginx  apache|2   change  verdict\n",
		"actions/s                  1,000     2,000  +100.0%  better (p<0.001)\n",
		"latency p95             2.105 ms  4.105 ms   +95.0%  worse (p<0.001)\n",
		"error rate                 0.00%     0.00%     0.0%  ~ within noise (p=1)\n",
		"server (mean over the phase)  nginx  apache|2  change  verdict\n",
		"context switches/s            8,006     9,006  +12.5%  higher (p<0.001)\n",
		"Verdicts: two-sided Mann-Whitney U test",
		"Warnings:\n  - nginx and apache|2 ran different loads (users 10 vs 20)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestMarkdownTables(t *testing.T) {
	out := render(t, sample(t), "markdown")
	if !strings.HasPrefix(out, "### Comparing 2 runs, steady phase\n\n- **nginx**: demo · dir/run1.json") ||
		!strings.Contains(out, "**Warnings**\n\n- nginx and apache\\|2 ran different loads") {
		t.Errorf("markdown:\n%s", out)
	}
	// Every table line has as many cells as its header (escaped pipes are
	// no cell separators); the second line aligns.
	var head int
	tables := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			head = 0
			continue
		}
		if !strings.HasSuffix(line, "|") {
			t.Errorf("table line does not end with |: %q", line)
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1
		switch {
		case head == 0:
			head = n
			tables++
			if !strings.Contains(line, "| apache\\|2 |") {
				t.Errorf("header %q", line)
			}
		case n != head:
			t.Errorf("%d cells, header has %d: %q", n, head, line)
		}
		if strings.HasPrefix(line, "|:---|") && line != "|:---|---:|---:|---:|:---|" {
			t.Errorf("alignment row %q", line)
		}
	}
	if tables != 2 {
		t.Errorf("%d tables, want client and server", tables)
	}
}

// CSV: one header line, one line per row, raw numbers that read back to
// the comparison's own values.
func TestCSV(t *testing.T) {
	c := sample(t)
	recs, err := csv.NewReader(strings.NewReader(render(t, c, "csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "measure", "group", "unit", "better", "nginx", "apache|2", "apache|2 change %", "apache|2 verdict", "apache|2 p"}
	if strings.Join(recs[0], ",") != strings.Join(want, ",") || len(recs) != 1+len(c.Rows) {
		t.Fatalf("header %q, %d lines for %d rows", recs[0], len(recs), len(c.Rows))
	}
	for i, r := range c.Rows {
		rec := recs[i+1]
		if rec[0] != r.ID || rec[2] != r.Group || rec[8] != string(r.Tests[1].Verdict) {
			t.Errorf("line %d: %q for %+v", i+1, rec, r)
		}
		for j, v := range r.Values {
			got, err := strconv.ParseFloat(rec[5+j], 64)
			if err != nil || got != float64(v) {
				t.Errorf("%s value %d: %q, want %v", r.ID, j, rec[5+j], v)
			}
		}
	}
	// Missing numbers are empty cells.
	c.Rows[0].Values[1] = result.Num(math.NaN())
	recs, _ = csv.NewReader(strings.NewReader(render(t, c, "csv"))).ReadAll()
	if recs[1][6] != "" {
		t.Errorf("NaN written as %q", recs[1][6])
	}
}

func TestJSON(t *testing.T) {
	c := sample(t)
	out := render(t, c, "json")
	var back Comparison
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != "throng.compare/1" || len(back.Rows) != len(c.Rows) || len(back.Runs) != 2 || len(back.Warnings) != 1 {
		t.Fatalf("read back %+v", back)
	}
	r := back.Rows[0]
	if r.ID != "rate_per_s" || r.Better != "higher" || r.Tests[1].Verdict != Better || r.Tests[1].N != [2]int{12, 12} ||
		!math.IsNaN(float64(r.Change[0])) || float64(r.Values[1]) != float64(c.Rows[0].Values[1]) {
		t.Errorf("row %+v", r)
	}
	if !strings.Contains(out, `"p": null`) || !strings.Contains(out, "p < 0.05") {
		t.Error("NaN is not null, or < is escaped")
	}
	if err := Render(&bytes.Buffer{}, c, "yaml"); err == nil || !strings.Contains(err.Error(), "text, markdown, csv, json") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{formatValue("1/s", 74397.2), "74,397"},
		{formatValue("ratio", 0.0012), "0.12%"},
		{formatValue("ms", 0.2345), "0.234 ms"}, // rounds half to even, as report's ms
		{formatValue("ms", 1500), "1.50 s"},
		{formatValue("cores", 1.456), "1.46"},
		{formatValue("", 0.000811), "0.000811"},
		{formatValue("", math.NaN()), "–"},
		{formatChange(3.84), "+3.8%"},
		{formatChange(-12), "-12.0%"},
		{formatChange(0.01), "0.0%"},
		{formatChange(math.NaN()), "–"},
		{verdictCell(Test{Verdict: Better, P: 0.0123}), "better (p=0.012)"},
		{verdictCell(Test{Verdict: Noise, P: 0.41}), "~ within noise (p=0.41)"},
		{verdictCell(Test{Verdict: TooFew, P: 0.1, N: [2]int{3, 3}, Samples: "repetitions"}), "too few samples (3 vs 3 repetitions)"},
		{verdictCell(Test{Verdict: NoData, P: result.Num(math.NaN())}), "no data"},
		{num(-1234567), "-1,234,567"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
