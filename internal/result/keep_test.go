package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/testenv"
)

// counterful is an interval with the machine's counters, as big as a real
// one (about 2 KB in the journal).
func counterful(i int) Interval {
	iv := interval(i, "steady", uint64(5+i%7), uint64(100*(1+i%13)))
	vals := map[string]float64{}
	for k := range 40 {
		vals["series_"+strconv.Itoa(k)+"_total"] = float64(i * k)
	}
	iv.Counters = append(iv.Counters, sysValues(1, 0.5, float64(i)))
	iv.Counters[0].Values["extra"] = float64(i)
	for k, v := range vals {
		iv.Counters[0].Values[k] = v
	}
	return iv
}

var demoMeta = Meta{Scenario: "demo", Actions: []string{"page"}, StartedAt: time.Unix(1700000000, 0)}

// On a full disk the journal keeps in memory, in order, what its file
// refuses — even a record cut in the middle by the disk filling — and
// writes it when space comes back: the file is then whole, every record
// once, nothing torn.
func TestJournalKeepsWhatAFullDiskRefuses(t *testing.T) {
	dir := testenv.Tmpfs(t, 256<<10)
	filler := testenv.Fill(t, dir, 12<<10)
	path := filepath.Join(dir, "run.journal.jsonl")
	j, err := CreateJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Meta(&demoMeta); err != nil {
		t.Fatal(err)
	}
	j.Repetition(0, demoMeta.StartedAt)
	var refused error
	const n = 40
	for i := range n {
		iv := counterful(i)
		if err := j.Interval(0, &iv); err != nil && refused == nil {
			refused = err
		}
	}
	st := j.State()
	if !errors.Is(refused, syscall.ENOSPC) || st.Pending == 0 || st.InFile >= n || st.InFile == 0 || st.Intervals != n || len(st.Lost) > 0 {
		t.Fatalf("refused %v; state %+v: want ENOSPC, some intervals in the file, the rest pending", refused, st)
	}
	// Everything made is readable now: the file's part, then memory's.
	back, err := ReadJournal(j.Contents())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(back.Repetitions[0].Intervals); got != n {
		t.Fatalf("read back %d intervals of %d", got, n)
	}
	// Space comes back: the next record carries the pending ones.
	os.Remove(filler)
	iv := counterful(n)
	if err := j.Interval(0, &iv); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	j.RepetitionEnd(&Repetition{Index: 0, ElapsedS: n + 1})
	j.End(false, "")
	if st := j.State(); !st.Complete() || st.InFile != n+1 || st.FirstErr == nil {
		t.Fatalf("state %+v: want complete, %d intervals in the file, the first error remembered", st, n+1)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if run.Partial || len(run.Repetitions[0].Intervals) != n+1 {
		t.Fatalf("file: partial %v, %d intervals", run.Partial, len(run.Repetitions[0].Intervals))
	}
	for i, iv := range run.Repetitions[0].Intervals {
		want := counterful(i)
		if iv.Index != i || iv.Actions[0].Count != want.Actions[0].Count || iv.Counters[0].Values["extra"] != float64(i) {
			t.Fatalf("interval %d read back as %+v", i, iv)
		}
	}
}

// A file that never takes anything (/dev/full): the journal keeps its
// records up to its bound, then drops intervals — and counts them, by
// repetition and index — while the small records are always kept.
func TestJournalMemoryIsBounded(t *testing.T) {
	t.Parallel()
	j, err := CreateJournal("/dev/full")
	if err != nil {
		t.Skipf("/dev/full: %v", err)
	}
	defer j.Close()
	j.maxPending = 16 << 10
	j.fallback = "" // nowhere to move to (TestJournalMovesWhenMemoryIsFull)
	if err := j.Meta(&demoMeta); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("meta on /dev/full: %v", err)
	}
	j.Repetition(0, demoMeta.StartedAt)
	for i := range 30 {
		iv := counterful(i)
		j.Interval(0, &iv)
	}
	j.RepetitionEnd(&Repetition{Index: 0, ElapsedS: 30})
	j.End(false, "")
	st := j.State()
	if st.Pending > 16<<10+4<<10 || len(st.Lost) != 1 || st.Intervals != 30 || st.InFile != 0 {
		t.Fatalf("state %+v: want at most the bound pending, one run of lost intervals", st)
	}
	l := st.Lost[0]
	kept := 30 - l.N
	if l.Rep != 0 || l.Last != 29 || l.First != kept || kept < 3 {
		t.Fatalf("lost %+v", l)
	}
	// What was kept is a journal of its own, with its end.
	run, err := ReadJournal(j.Contents())
	if err != nil {
		t.Fatal(err)
	}
	if run.Partial || len(run.Repetitions[0].Intervals) != kept {
		t.Fatalf("kept: partial %v, %d intervals, want %d", run.Partial, len(run.Repetitions[0].Intervals), kept)
	}
	if err := j.Close(); err == nil || !strings.Contains(err.Error(), "stops after 0 of 30 intervals") {
		t.Errorf("close: %v", err)
	}
	msg := LostTaint(l).Message
	if !strings.Contains(msg, strconv.Itoa(l.N)+" intervals, from "+strconv.Itoa(kept)+" to 29, could not be kept: the journal's file refused them (write /dev/full: no space left on device) and the 16 KiB of memory") {
		t.Errorf("lost taint: %s", msg)
	}
}

// An interval that cannot be encoded (a NaN, which the sources never
// give) is not dropped silently: it is counted lost, with the reason.
func TestJournalCountsWhatItCannotEncode(t *testing.T) {
	t.Parallel()
	j, err := CreateJournal(filepath.Join(t.TempDir(), "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.Meta(&demoMeta)
	j.Repetition(0, demoMeta.StartedAt)
	iv := counterful(0)
	iv.Client.CPUCores = math.NaN()
	if err := j.Interval(0, &iv); err == nil {
		t.Fatal("a NaN was journaled")
	}
	st := j.State()
	if len(st.Lost) != 1 || st.Lost[0].N != 1 || !strings.Contains(LostTaint(st.Lost[0]).Message, "interval 0 could not be kept: journal: cannot encode the interval record: json: unsupported value: NaN") {
		t.Errorf("state %+v", st)
	}
}

// journalOf writes a journal of two repetitions (the second amended at its
// end, as the engine does when actions finish in the instant of its final
// cut) and a third that never got past its start.
func journalOf(t *testing.T, w *bytes.Buffer) *Run {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := CreateJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Meta(&demoMeta)
	run := &Run{Schema: Schema, Meta: demoMeta}
	for r := range 2 {
		j.Repetition(r, demoMeta.StartedAt)
		s := NewSummarizer(demoMeta.Actions, 0)
		for i := range 3 + r {
			iv := counterful(i)
			j.Interval(r, &iv)
			s.Add(&iv)
		}
		rep := Repetition{Index: r, ElapsedS: float64(3 + r)}
		if r == 1 {
			am := counterful(3 + r - 1)
			am.Actions[0] = interval(0, "steady", 100, 7).Actions[0]
			j.Amend(r, &am)
			s.Replace(&am)
		}
		rep.Summaries = s.Summaries()
		j.RepetitionEnd(&rep)
		run.Repetitions = append(run.Repetitions, rep)
	}
	j.Repetition(2, demoMeta.StartedAt)
	j.End(true, "repetition 3 could not start")
	run.Partial, run.Reason = true, "repetition 3 could not start"
	if _, err := w.ReadFrom(j.Contents()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	return run
}

// The result written from a journal (one interval at a time) holds what
// the journal holds, amendments applied: the same as reading the journal
// whole.
func TestResultFromJournalEqualsJournal(t *testing.T) {
	t.Parallel()
	var jb bytes.Buffer
	run := journalOf(t, &jb)
	whole, err := ReadJournal(bytes.NewReader(jb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Encode(&out, run, JournalSource(bytes.NewReader(jb.Bytes()))); err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for r := range 2 {
		a, _ := json.Marshal(got.Repetitions[r].Intervals)
		b, _ := json.Marshal(whole.Repetitions[r].Intervals)
		if string(a) != string(b) || len(got.Repetitions[r].Intervals) != 3+r {
			t.Errorf("repetition %d: result %s\njournal %s", r, a, b)
		}
		if jsonOf(got.Repetitions[r].Summaries) != jsonOf(run.Repetitions[r].Summaries) {
			t.Errorf("repetition %d: summaries changed on the way", r)
		}
	}
	// The amendment is in: 100 actions in the last interval, not 5+3.
	last := got.Repetitions[1].Intervals[3]
	if last.Actions[0].Count != 100 || Find(got.Repetitions[1].Summaries, All).Total.Count != 5+6+7+100 {
		t.Errorf("amended interval %d actions, summary %d", last.Actions[0].Count, Find(got.Repetitions[1].Summaries, All).Total.Count)
	}
	// Written from memory, the same run gives the same file; and
	// json.Marshal of the whole Run reads back the same (the field order
	// differs, not the content).
	inMem := *run
	inMem.Repetitions = append([]Repetition(nil), run.Repetitions...)
	for r := range inMem.Repetitions {
		inMem.Repetitions[r].Intervals = whole.Repetitions[r].Intervals
	}
	var mem bytes.Buffer
	if err := Encode(&mem, &inMem, MemorySource(&inMem)); err != nil {
		t.Fatal(err)
	}
	if mem.String() != out.String() {
		t.Errorf("from memory and from the journal differ:\n%.300s\n%.300s", mem.String(), out.String())
	}
	plain, _ := json.Marshal(&inMem)
	viaPlain, err := Read(bytes.NewReader(plain))
	if err != nil || jsonOf(viaPlain) != jsonOf(got) {
		t.Errorf("json.Marshal of the run and Encode disagree (%v)", err)
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// A journal that cannot be read back whole still gives a result: the
// interval list stops where reading failed, and a taint says so.
func TestResultFromDamagedJournalSaysSo(t *testing.T) {
	t.Parallel()
	var jb bytes.Buffer
	run := journalOf(t, &jb)
	lines := bytes.Split(jb.Bytes(), []byte("\n"))
	lines[3] = []byte("{damaged")
	var out bytes.Buffer
	if err := Encode(&out, run, JournalSource(bytes.NewReader(bytes.Join(lines, []byte("\n"))))); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	r0 := got.Repetitions[0]
	if len(r0.Intervals) != 1 || len(r0.Taints) != 1 || r0.Taints[0].Kind != "intervals_missing" ||
		!strings.Contains(r0.Taints[0].Message, "stops after 1 intervals") || !strings.Contains(r0.Taints[0].Message, "line 4") {
		t.Errorf("repetition 1: %d intervals, taints %+v", len(r0.Intervals), r0.Taints)
	}
	if n := len(got.Repetitions[1].Intervals); n != 0 || len(got.Repetitions[1].Taints) != 1 {
		t.Errorf("repetition 2: %d intervals, taints %+v", n, got.Repetitions[1].Taints)
	}
}

// Save writes where asked; on a full disk, in the system's temporary
// directory, saying why; when that fails too, nowhere, saying both whys.
// The result and the journal get the same mode.
func TestSaveFallsBackAndSaysWhy(t *testing.T) {
	full := testenv.Tmpfs(t, 64<<10)
	testenv.Fill(t, full, 0)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	run := &Run{Schema: Schema, Meta: demoMeta}
	run.Repetitions = []Repetition{{Intervals: []Interval{counterful(0), counterful(1)}}}
	run.Repetitions[0].Summaries = Summarize(demoMeta.Actions, 0, run.Repetitions[0].Intervals)
	src := func() Source { return MemorySource(run) }

	ok := filepath.Join(t.TempDir(), "sub", "r.json")
	at, err := Save(ok, run, src)
	if at != ok || err != nil {
		t.Fatalf("Save to a good place: %q %v", at, err)
	}
	j, err := CreateJournal(JournalPath(ok))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	rst, _ := os.Stat(ok)
	jst, _ := os.Stat(JournalPath(ok))
	if rst.Mode().Perm() != jst.Mode().Perm() || rst.Mode().Perm() != FileMode&^umask(t) {
		t.Errorf("result mode %v, journal mode %v: want both %v", rst.Mode().Perm(), jst.Mode().Perm(), os.FileMode(FileMode&^umask(t)))
	}

	asked := filepath.Join(full, "r.json")
	at, err = Save(asked, run, src)
	if at != filepath.Join(tmp, "r.json") || err == nil || !strings.Contains(err.Error(), asked+": no space left on device") {
		t.Fatalf("Save to a full disk: at %q, %v", at, err)
	}
	if back, err := ReadFile(at); err != nil || len(back.Repetitions[0].Intervals) != 2 {
		t.Fatalf("the fallback result: %v", err)
	}
	if ents, _ := os.ReadDir(full); len(ents) != 1 {
		t.Errorf("left in the full directory: %v", ents)
	}
	// The temporary directory is no directory: nowhere.
	notDir := filepath.Join(tmp, "file")
	os.WriteFile(notDir, nil, 0o644)
	t.Setenv("TMPDIR", notDir)
	at, err = Save(asked, run, src)
	if at != "" || err == nil || !strings.Contains(err.Error(), asked+": no space left on device") || !strings.Contains(err.Error(), filepath.Join(notDir, "r.json")+": not a directory") {
		t.Errorf("Save with nowhere to go: at %q, %v", at, err)
	}
}

// umask reads the process's umask without changing it.
func umask(t *testing.T) os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			return os.FileMode(m)
		}
	}
	t.Skip("no Umask in /proc/self/status")
	return 0
}

// ContentsFrom reads the journal from an Offset taken earlier — from the
// file, from what is kept in memory, or across both — the same bytes as
// Contents from there: a repetition's records are read back from where they
// start (one pass over the journal for all repetitions, not one pass each).
func TestJournalContentsFrom(t *testing.T) {
	dir := testenv.Tmpfs(t, 256<<10)
	filler := testenv.Fill(t, dir, 12<<10)
	j, err := CreateJournal(filepath.Join(dir, "run.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.Meta(&demoMeta)
	var offs []int64
	for rep := range 3 {
		offs = append(offs, j.Offset())
		j.Repetition(rep, demoMeta.StartedAt)
		for i := range 6 {
			iv := counterful(i)
			j.Interval(rep, &iv)
		}
		j.RepetitionEnd(&Repetition{Index: rep, ElapsedS: 6})
	}
	offs = append(offs, j.Offset())
	j.End(false, "")
	if st := j.State(); st.Pending == 0 || st.InFile == 0 {
		t.Fatalf("state %+v: want part of the journal in the file, part in memory", st)
	}
	all, _ := io.ReadAll(j.Contents())
	if int64(len(all)) != j.Offset() {
		t.Fatalf("Contents has %d bytes, Offset says %d", len(all), j.Offset())
	}
	for _, off := range append(offs, 0, j.Offset(), j.Offset()-1, j.Offset()+5) {
		got, err := io.ReadAll(j.ContentsFrom(off))
		if err != nil {
			t.Fatal(err)
		}
		if want := all[min(off, int64(len(all))):]; !bytes.Equal(got, want) {
			t.Errorf("from %d: %d bytes, want %d", off, len(got), len(want))
		}
	}
	// Each repetition read back from its start gives its own intervals.
	for rep := range 3 {
		r := &Repetition{Index: rep}
		n := 0
		for iv := range SourceIntervals(func() Source { return JournalSource(j.ContentsFrom(offs[rep])) }, rep, r) {
			if iv.Index != n {
				t.Fatalf("repetition %d: interval %d read as %d", rep, n, iv.Index)
			}
			n++
		}
		if n != 6 {
			t.Errorf("repetition %d: %d intervals read back, want 6", rep, n)
		}
	}
	os.Remove(filler)
}

// When its file refuses records and its memory for them is full, the
// journal moves, whole, to its fallback place (the system's temporary
// directory) and goes on there: no interval is lost, the file it was
// created at (a prefix of the copy) is gone, and its state names both
// paths. When the fallback cannot be written either, intervals are
// dropped and counted as before, and the reason says both whys.
func TestJournalMovesWhenMemoryIsFull(t *testing.T) {
	dir := testenv.Tmpfs(t, 256<<10)
	testenv.Fill(t, dir, 12<<10)
	const n = 40 // about 80 KB of intervals
	for _, c := range []struct {
		name  string
		moves bool
	}{{"moves", true}, {"nowhere", false}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".journal.jsonl")
			j, err := CreateJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			j.maxPending = 16 << 10
			fb := filepath.Join(t.TempDir(), c.name+".journal.jsonl")
			if !c.moves {
				notDir := filepath.Join(t.TempDir(), "file")
				os.WriteFile(notDir, nil, 0o644)
				fb = filepath.Join(notDir, c.name+".journal.jsonl")
			}
			j.fallback = fb
			j.Meta(&demoMeta)
			j.Repetition(0, demoMeta.StartedAt)
			for i := range n {
				iv := counterful(i)
				j.Interval(0, &iv)
			}
			j.RepetitionEnd(&Repetition{Index: 0, ElapsedS: n})
			j.End(false, "")
			st := j.State()
			if !c.moves {
				if len(st.Lost) != 1 || st.MovedFrom != "" || st.Path != path ||
					!strings.Contains(st.Lost[0].Why, "it could not be moved either (to "+fb+": not a directory)") {
					t.Fatalf("state %+v: want intervals lost, saying the move failed too", st)
				}
				return
			}
			if !st.Complete() || st.Intervals != n || st.InFile != n || st.MovedFrom != path || st.Path != fb || j.Path() != fb {
				t.Fatalf("state %+v: want the whole journal moved to %s", st, fb)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the first file is still there: %v", err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			run, err := ReadFile(fb)
			if err != nil {
				t.Fatal(err)
			}
			if run.Partial || len(run.Repetitions[0].Intervals) != n {
				t.Fatalf("moved journal: partial %v, %d intervals, want %d", run.Partial, len(run.Repetitions[0].Intervals), n)
			}
			for i, iv := range run.Repetitions[0].Intervals {
				if iv.Index != i || iv.Counters[0].Values["extra"] != float64(i) {
					t.Fatalf("interval %d read back as %d", i, iv.Index)
				}
			}
		})
	}
}
