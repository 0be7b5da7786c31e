package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// fakeStation is a server whose p95 is 10 ms up to 100 users and grows
// by 1 ms a user past them, and whose actions/s are the users × 10 up to
// 1,000: each step a run of 10 one-second steady intervals.
func fakeStation(load float64) *result.Run {
	lat := 10 + math.Max(0, load-100)
	n := int(math.Min(10*load, 1000))
	var ivs []result.Interval
	for i := range 10 {
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(n, lat*(1+0.01*float64(i%3)))}})
	}
	run := mkRun("closed", []string{"get"}, 0, ivs)
	run.Schema, run.Meta.Scenario, run.Meta.Target = result.Schema, "web-static", "http://127.0.0.1:8080"
	run.Meta.StartedAt = time.Date(2026, 11, 21, 13, 2, 0, 0, time.UTC)
	return run
}

// testSearch runs a search against fakeStation and writes it down.
func testSearch(t testing.TB) (Config, []Step, []*result.Run, Answer) {
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 50ms"), mustSLO(t, "errors == 0")}, Dimension: Users,
		Min: 10, Max: 1000, StepDuration: 10 * time.Second}
	var steps []Step
	var runs []*result.Run
	for range 30 {
		d := Decide(cfg, steps)
		if d.Done {
			return cfg, steps, runs, *d.Answer
		}
		run := fakeStation(d.Next.Load)
		steps, runs = append(steps, FromRun(cfg, d.Next, run, d.Next.Duration+time.Second)), append(runs, run)
	}
	t.Fatal("the search did not end")
	return cfg, nil, nil, Answer{}
}

func encode(t testing.TB, rec *Record) []byte {
	var b bytes.Buffer
	if err := WriteRecord(&b, rec); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A record written and read back is the same record, NaN (not measured)
// and infinite figures (no upper end) included, written as null; a
// second write gives the same bytes.
func TestRecordRoundTrip(t *testing.T) {
	cfg, steps, runs, ans := testSearch(t)
	if ans.Status != Found || ans.Capacity < 130 || ans.Capacity > 140 {
		t.Fatalf("%s: want about 140 users (p95 50 ms at 140)", ans.Statement)
	}
	rec := NewRecord(cfg, steps, runs, ans)
	first := encode(t, &rec)
	for _, want := range []string{`"schema": "throng.capacity/1"`, `"status": "found"`, `"unit": "users"`, `"ci95": [`,
		`"slos": [`, `"p95 \u003c 50ms"`, `"why": "warm-up at 10 users"`, `"server_cpu": null`, `"run": {`, `"schema": "` + result.Schema + `"`} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("the record lacks %s", want)
		}
	}
	path := filepath.Join(t.TempDir(), "capacity.json")
	if err := WriteRecordFile(path, &rec); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if again := encode(t, back); !bytes.Equal(first, again) {
		t.Fatalf("read back and written again, the record differs:\n%s\n---\n%s", first, again)
	}
	if back.Max.Value != result.Num(ans.Capacity) || back.Max.CI95[0] != result.Num(ans.Low) || len(back.Steps) != len(steps) ||
		back.Steps[3].Run == nil || back.Steps[3].Run.Repetitions[0].Summaries == nil || back.Scenario != "web-static" {
		t.Errorf("read back: %+v", back.Max)
	}
	// The bounds that JSON cannot hold: a capacity not found, no upper
	// end, figures and counters not measured.
	ans2 := Conclude(cfg, steps[:3])
	ans2.High, ans2.Reach = math.Inf(1), math.Inf(1)
	steps2 := append([]Step(nil), steps[:3]...)
	steps2[2].SLOs = []Figure{{Value: math.NaN(), HalfWidth: math.NaN()}, {Value: 0}}
	steps2[2].Invalid = []Invalid{{Kind: Missing, Why: "no action finished"}}
	steps2[2].Concurrency = math.Inf(1)
	rec2 := NewRecord(cfg, steps2, []*result.Run{nil, runs[1]}, ans2)
	b := encode(t, &rec2)
	back2, err := ReadRecord(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !math.IsNaN(float64(back2.Max.Value)) || !math.IsNaN(float64(back2.Max.CI95[1])) || !math.IsNaN(float64(back2.Steps[2].SLOs[0].Value)) ||
		back2.Steps[0].Run != nil || back2.Steps[2].Run != nil || back2.Steps[2].Verdict != VerdictInvalid {
		t.Errorf("read back %+v, steps %+v", back2.Max, back2.Steps[2])
	}
	if again := encode(t, back2); !bytes.Equal(b, again) {
		t.Errorf("read back and written again, the record differs")
	}
}

// Bad input is refused with a *result.FormatError that says where and why.
func TestReadRecordBadInput(t *testing.T) {
	cfg, steps, runs, ans := testSearch(t)
	rec := NewRecord(cfg, steps, runs, ans)
	good := encode(t, &rec)
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	step := func(m map[string]any, i int) map[string]any { return m["steps"].([]any)[i].(map[string]any) }
	for _, c := range []struct {
		name, input, want string
	}{
		{"empty", "", "not a capacity record"},
		{"not JSON", "{\n \"schema\": \"throng.capacity/1\",\n x}", "line 3, column 2"},
		{"a run", `{"schema": "throng.run/1"}`, "a run's result"},
		{"a newer version", `{"schema": "throng.capacity/2"}`, "is not throng.capacity/1"},
		{"no schema", `{"max": {}}`, `schema ""`},
		{"unknown field", edit(func(m map[string]any) { m["maximum"] = 3 }), `unknown field "maximum"`},
		{"unknown step field", edit(func(m map[string]any) { step(m, 2)["lod"] = 3 }), `steps[2]: `},
		{"trailing data", string(good) + "{}", "after top-level value"},
		{"bad SLO", edit(func(m map[string]any) { m["config"].(map[string]any)["slos"] = []any{"p95 < 50", "errors == 0"} }), "config.slos[0]"},
		{"bad config", edit(func(m map[string]any) { m["config"].(map[string]any)["min"] = -1 }), "--min"},
		{"bad status", edit(func(m map[string]any) { m["status"] = "great" }), `unknown status "great"`},
		{"bad kind", edit(func(m map[string]any) { step(m, 1)["request"].(map[string]any)["kind"] = "guess" }), "steps[1].request.kind"},
		{"bad load", edit(func(m map[string]any) { step(m, 1)["request"].(map[string]any)["load"] = -3 }), "steps[1].request.load"},
		{"bad verdict", edit(func(m map[string]any) { step(m, 1)["verdict"] = "fine" }), "steps[1].verdict"},
		{"invalid without a reason", edit(func(m map[string]any) { step(m, 1)["verdict"] = "invalid" }), "steps[1]: verdict"},
		{"SLO count", edit(func(m map[string]any) { step(m, 1)["slos"] = []any{} }), "steps[1].slos: 0 figures for 2 SLOs"},
		{"below", edit(func(m map[string]any) { m["below"] = 99 }), "below 99"},
		{"outside its interval", edit(func(m map[string]any) { m["max"].(map[string]any)["value"] = 1e6 }), "not in its interval"},
		{"unit", edit(func(m map[string]any) { m["max"].(map[string]any)["unit"] = "per_s" }), "max.unit"},
		{"huge", edit(func(m map[string]any) { step(m, 1)["counters"].(map[string]any)["memory"] = 1e300 }), "steps[1]: a number"},
		{"damaged run", edit(func(m map[string]any) { step(m, 2)["run"].(map[string]any)["schema"] = "throng.run/9" }), "steps[2].run: result schema throng.run/9"},
		{"damaged run interval", edit(func(m map[string]any) {
			step(m, 2)["run"].(map[string]any)["repetitions"].([]any)[0].(map[string]any)["intervals"].([]any)[0].(map[string]any)["duration_s"] = -1
		}), "steps[2].run: repetition 1, interval 0"},
	} {
		_, err := ReadRecord(strings.NewReader(c.input))
		var fe *result.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a format error saying %q", c.name, err, c.want)
		}
	}
	// A file names itself; a directory is no record.
	path := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(path, []byte("{}"), 0o644)
	if _, err := ReadRecordFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("%v, want the file named", err)
	}
	if _, err := ReadRecordFile(filepath.Dir(path)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
}

// Whatever the bytes: no panic, and either a record that writes back to
// what reads as the same, or a *result.FormatError.
func FuzzReadRecord(f *testing.F) {
	cfg, steps, runs, ans := testSearch(f)
	rec := NewRecord(cfg, steps[:4], runs[:4], Conclude(cfg, steps[:4]))
	good := encode(f, &rec)
	for k := range 12 {
		f.Add(good[:len(good)*k/12])
	}
	f.Add(good)
	rec = NewRecord(cfg, steps, nil, ans)
	f.Add(encode(f, &rec))
	f.Add([]byte(`{"schema":"throng.capacity/1","config":{},"max":{"ci95":[null,null]},"steps":[{"run":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadRecord(bytes.NewReader(b))
		if err != nil {
			var fe *result.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%T %v: not a format error", err, err)
			}
			return
		}
		once := encode(t, r)
		r2, err := ReadRecord(bytes.NewReader(once))
		if err != nil {
			t.Fatalf("written back, it does not read: %v\n%s", err, once)
		}
		if twice := encode(t, r2); !bytes.Equal(once, twice) {
			t.Fatalf("not a fixed point:\n%s\n%s", once, twice)
		}
	})
}
