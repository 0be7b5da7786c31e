package result

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
)

func interval(i int, phase string, count uint64, lat uint64) Interval {
	var s metrics.ActionSnapshot
	s.Count = count
	for k := uint64(0); k < count; k++ {
		s.Latency.Record(lat)
		s.Service.Record(lat / 2)
	}
	if count > 2 {
		s.Errors[driver.Timeout] = 2
		s.Messages[driver.Timeout] = "i/o timeout"
	}
	return Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: phase, ActiveUsers: 3,
		UsersMean: 3, UsersMax: 3, Actions: []ActionInterval{FromSnapshot(&s)}}
}

func writeJournal(t *testing.T, path string, end bool) {
	t.Helper()
	j, err := CreateJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta{Scenario: "demo", Actions: []string{"page"}, StartedAt: time.Unix(1700000000, 0)}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.Meta(&meta))
	must(j.Repetition(0, time.Unix(1700000000, 0)))
	for i, ph := range []string{"ramp-up", "steady", "steady", "ramp-down"} {
		iv := interval(i, ph, uint64(10*(i+1)), uint64(1000*(i+1)))
		must(j.Interval(0, &iv))
	}
	if end {
		must(j.RepetitionEnd(&Repetition{Index: 0, ElapsedS: 4}))
		must(j.End(false, ""))
	}
	must(j.Close())
}

func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "run.journal.jsonl")
	writeJournal(t, path, true)
	run, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if run.Partial || len(run.Repetitions) != 1 || run.Meta.Scenario != "demo" {
		t.Fatalf("run %+v", run)
	}
	rep := run.Repetitions[0]
	if len(rep.Intervals) != 4 || rep.ElapsedS != 4 {
		t.Fatalf("%d intervals, elapsed %v", len(rep.Intervals), rep.ElapsedS)
	}
	steady := Find(rep.Summaries, "steady")
	all := Find(rep.Summaries, All)
	if steady == nil || steady.Total.Count != 50 || steady.Intervals != 2 || steady.DurationS != 2 || steady.Total.RatePerS != 25 {
		t.Fatalf("steady summary %+v", steady)
	}
	if all.Total.Count != 100 || all.Total.ErrorsByClass["timeout"] != 8 || all.Total.Messages["timeout"] != "i/o timeout" {
		t.Errorf("all summary count %d errors %v", all.Total.Count, all.Total.ErrorsByClass)
	}
	// Percentiles come from the merged histograms, not from averaging: the
	// steady state holds 20 values of 2 ms and 30 of 3 ms.
	if steady.Total.Latency.P50Ms != 3 || steady.Total.Latency.MinMs != 2 || steady.Total.Latency.MeanMs != 2.6 {
		t.Errorf("steady latency %+v", steady.Total.Latency)
	}
}

// A run killed with kill -9 leaves a journal whose last line may be cut in
// the middle, and no end record: it still reads, marked partial.
func TestJournalCutShortIsPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.journal.jsonl")
	writeJournal(t, path, false)
	b, _ := os.ReadFile(path)
	cut := b[:len(b)-40] // the last interval's line, cut
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Partial || !strings.Contains(run.Reason, "cut short") {
		t.Errorf("partial=%v reason=%q", run.Partial, run.Reason)
	}
	rep := run.Repetitions[0]
	if len(rep.Intervals) != 3 || !rep.Partial || rep.ElapsedS != 3 {
		t.Errorf("%d intervals partial=%v elapsed=%v, want the 3 complete ones", len(rep.Intervals), rep.Partial, rep.ElapsedS)
	}
	// A damaged line in the middle is not silently skipped.
	lines := bytes.Split(b, []byte("\n"))
	lines[2] = lines[2][:10]
	if err := os.WriteFile(path, bytes.Join(lines, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged journal read without error: %v", err)
	}
}

func TestWriteFileIsAtomicAndReadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	run := &Run{Schema: Schema, Meta: Meta{Scenario: "x", Actions: []string{"a"}}}
	run.Repetitions = []Repetition{{Intervals: []Interval{interval(0, "steady", 5, 100)}}}
	run.Repetitions[0].Summaries = Summarize(run.Meta.Actions, len(run.Meta.Events), run.Repetitions[0].Intervals)
	if err := WriteFile(path, run); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Repetitions[0].Summaries[0].Total.Count != 5 {
		t.Errorf("read back %+v", back.Repetitions[0].Summaries)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	os.WriteFile(path, []byte(`{"schema":"throng.run/99"}`), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "throng.run/99") {
		t.Errorf("a newer schema was read: %v", err)
	}
	os.WriteFile(path, []byte(`not json`), 0o644)
	if _, err := ReadFile(path); err == nil {
		t.Error("garbage was read as a result")
	}
}

func TestTaints(t *testing.T) {
	t.Parallel()
	rep := &Repetition{Intervals: []Interval{interval(0, "steady", 5, 100), interval(1, "steady", 5, 100)}}
	rep.Intervals[1].Client.Bound = true
	rep.Intervals[1].Client.BoundWhy = "event loop 0 busy 97%"
	rep.Intervals[0].Client.MachineBusy = 0.99
	rep.Intervals[0].Actions[0].Dropped = 7
	got := ComputeTaints(rep)
	kinds := map[string]string{}
	for _, tt := range got {
		kinds[tt.Kind] = tt.Message
	}
	if !strings.Contains(kinds["client_bound"], "1 of 2 intervals of the steady phase were client-bound (event loop 0 busy 97%)") ||
		!strings.Contains(kinds["client_bound"], "more threads") {
		t.Errorf("client_bound: %q", kinds["client_bound"])
	}
	// Starved by other processes: more threads would not help.
	rep.Intervals[1].Client.BoundWhy = "its threads waited for a CPU 93% of the time they had work"
	for _, tt := range ComputeTaints(rep) {
		if tt.Kind == "client_bound" && (!strings.Contains(tt.Message, "run it on a machine of its own") || strings.Contains(tt.Message, "more threads")) {
			t.Errorf("starved: %q", tt.Message)
		}
	}
	if !strings.Contains(kinds["dropped_arrivals"], "7 arrivals") || kinds["machine_saturated"] == "" {
		t.Errorf("taints %v", kinds)
	}
}
