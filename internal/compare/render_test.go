package compare

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sample compares a baseline with keep-alive against a faster
// configuration without it (a configuration difference, a threshold
// failed) and a third run of one repetition.
func sample(t *testing.T) *Comparison {
	rng := rand.New(rand.NewPCG(11, 12))
	fast := realistic
	fast.lat, fast.rate = 1.5, 2600
	a := simRun(rng, realistic, "keepalive", 5, 1)
	a.Meta.Source = "web:\n  keepalive: true\nusers: 10\n"
	a.Meta.Settings = map[string]string{"keepalive": "true", "tls": "false"}
	b := simRun(rng, fast, "close", 5, 1)
	b.Meta.Source = "web:\n  keepalive: false\nusers: 10\n"
	b.Meta.SourceSHA256 = "other"
	b.Meta.Settings = map[string]string{"keepalive": "false", "tls": "false"}
	b.Thresholds = []result.ThresholdOutcome{{Threshold: "p99 < 5ms", Phase: "steady", Pass: false, Message: "p99 in the steady phase is 5.2 ms: not < 5 ms"}}
	a.Thresholds = []result.ThresholdOutcome{{Threshold: "p99 < 5ms", Phase: "steady", Pass: true, Message: "p99 in the steady phase is 4.8 ms, within < 5 ms"}}
	c := simRun(rng, realistic, "single", 1, 0)
	c.Meta.Source, c.Meta.Settings = a.Meta.Source, a.Meta.Settings
	return mustCompare(t, nil, a, b, c)
}

// samplePaired compares two configurations of one interleaved throng
// run (their repetitions paired by round), with mail's delivery and loss
// rows, the second losing more; one of its repetitions is not valid (the
// server's counters went missing in an interval).
func samplePaired(t *testing.T) *Comparison {
	rng := rand.New(rand.NewPCG(21, 22))
	m := realistic
	m.lost, m.interleave = 0.002, "online-vs-cached@1"
	m.intervals, m.ivSD = 30, 0.02 // long and quiet enough for the p99 to be known within ±10 %
	m.drift = drifts(rng, 5, 0.05)
	lossy := m
	lossy.lost, lossy.lat = 0.02, 2.4
	a := simRun(rng, m, "cached", 5, 1)
	b := simRun(rng, lossy, "online", 5, 1)
	a.Meta.Source = "mail:\n  mode: cached\nusers: 10\n"
	b.Meta.Source = "mail:\n  mode: online\nusers: 10\n"
	rep := &b.Repetitions[2]
	rep.Intervals[13].Counters[0] = sampler.SourceValues{Name: "system", Err: "open /proc/stat: too many open files"}
	rep.Summaries = result.Summarize(b.Meta.Actions, len(b.Meta.Events), rep.Intervals)
	rep.Validity = result.CheckValidity(&b.Meta, rep)
	return mustCompare(t, nil, a, b)
}

func render(t *testing.T, c *Comparison, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, c, format); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// golden compares got with testdata/NAME; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	c := sample(t)
	noContradiction(t, c)
	golden(t, "compare.txt", render(t, c, "text"))
	golden(t, "compare.md", render(t, c, "markdown"))
	golden(t, "compare.csv", render(t, c, "csv"))
	var h strings.Builder
	if err := HTML(&h, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.html", h.String())
}

// Two runs paired by round, with delivery and loss rows and a repetition
// that is not valid.
func TestGoldenPaired(t *testing.T) {
	c := samplePaired(t)
	noContradiction(t, c)
	for _, r := range c.Rows {
		if d := r.Diffs[1]; !math.IsNaN(float64(d.P)) && !d.Paired {
			t.Errorf("%s not paired", r.ID)
		}
	}
	lost := rowIn(t, c, "steady", "event.deliver.lost")
	if lost.Group != "delivery" || lost.Diffs[1].Verdict != Worse || c.Runs[1].Valid != 4 || !hasWarning(c, "online: 1 of 5 repetitions not valid — repetition 3: counters fail") {
		t.Errorf("lost %+v, valid %d, warnings %q", lost.Diffs[1], c.Runs[1].Valid, c.Warnings)
	}
	golden(t, "compare-paired.txt", render(t, c, "text"))
	golden(t, "compare-paired.md", render(t, c, "markdown"))
	golden(t, "compare-paired.csv", render(t, c, "csv"))
}

func TestText(t *testing.T) {
	out := render(t, sample(t), "text")
	for _, want := range []string{
		"Comparing 3 configurations: keepalive, close, single (steady phase)\n",
		"5 repetitions, trimmed mean of the middle 3 of each row (trim 1)",
		"Configuration differences:\n  web.keepalive: true → false → true\n  settings.keepalive: true → false → true\n\n",
		"steady · client", "steady · per action", "steady · server (mean over the phase)",
		"better (p=", "cannot judge: 5 runs vs 1 (≈",
		"Thresholds:\n  keepalive: 1 of 1 passed\n  close: 0 of 1 passed — FAIL steady: p99 < 5ms (p99 in the steady phase is 5.2 ms: not < 5 ms)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "intervals sampled") {
		t.Error("the header still counts intervals")
	}
}

func TestMarkdownTables(t *testing.T) {
	out := render(t, sample(t), "markdown")
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
		case n != head:
			t.Errorf("%d cells, header has %d: %q", n, head, line)
		}
	}
	if tables != 3 {
		t.Errorf("%d tables, want client, per action and server", tables)
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
	if len(recs) != 1+len(c.Rows) || recs[0][6] != "keepalive" || recs[0][15] != "close change %" {
		t.Fatalf("header %q, %d lines for %d rows", recs[0], len(recs), len(c.Rows))
	}
	for i, r := range c.Rows {
		rec := recs[i+1]
		if rec[0] != r.Phase || rec[1] != r.ID || rec[21] != string(r.Diffs[1].Verdict) {
			t.Errorf("line %d: %q for %+v", i+1, rec, r)
		}
		for j, v := range r.Values {
			got, err := strconv.ParseFloat(rec[6+3*j], 64)
			if err != nil || got != float64(v.Value) {
				t.Errorf("%s value %d: %q, want %v", r.ID, j, rec[6+3*j], v.Value)
			}
		}
	}
}

func TestJSON(t *testing.T) {
	c := sample(t)
	out := render(t, c, "json")
	var back Comparison
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != "throng.compare/3" || len(back.Rows) != len(c.Rows) || len(back.Runs) != 3 || back.Tested != c.Tested {
		t.Fatalf("read back %+v", back)
	}
	r := back.Rows[0]
	if r.ID != "rate_per_s" || r.Better != "higher" || r.Diffs[1].Verdict != Better || r.Diffs[2].Verdict != CannotJudge ||
		!math.IsNaN(float64(r.Diffs[2].P)) || float64(r.Values[1].Value) != float64(c.Rows[0].Values[1].Value) {
		t.Errorf("row %+v", r)
	}
	if err := Render(&bytes.Buffer{}, c, "yaml"); err == nil || !strings.Contains(err.Error(), "text, markdown, csv, json") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{formatValue("1/s", 74397.2), "74,397"},
		{formatValue("ratio", 0.0012), "0.12%"},
		{formatValue("ms", 1500), "1.50 s"},
		{formatValue("cores", 1.456), "1.46"},
		{formatValue("", math.NaN()), "–"},
		{formatChange(3.84), "+3.8%"},
		{formatChange(-12), "-12.0%"},
		{formatChange(0.01), "0.0%"},
		{valueCell("1/s", Cell{Value: 1000, Spread: 21, N: 5}), "1,000 ±2.1%"},
		{valueCell("count", Cell{Value: 0, Spread: 1, N: 5}), "0 ±1"},
		{valueCell("1/s", Cell{Value: 1000, Spread: result.Num(math.NaN()), N: 1}), "1,000"},
		{ciCell("ms", 2, Diff{Lo: -0.2, Hi: 0.1}), "-10.0% … +5.0%"},
		{ciCell("count", 0, Diff{Lo: 100, Hi: 300}), "100 … 300"},
		{verdictCell(Diff{Verdict: Better, PAdj: 0.0123}), "better (p=0.012)"},
		{verdictCell(Diff{Verdict: Worse, PAdj: 0.0001}), "worse (p=<0.001)"},
		{verdictCell(Diff{Verdict: Same, RunsNeeded: 12}), "no difference detectable (≈12 runs a side for this size)"},
		{verdictCell(Diff{Verdict: NoData}), "no data"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
