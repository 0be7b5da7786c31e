package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/compare"
)

// The reading commands — report (text and HTML), compare (every format)
// and merge — fuzzed on arbitrary result and journal bytes through Main,
// the code of the throng command itself. Whatever the bytes: no panic, an
// answer within a bound of time and memory, and either success or exit 2
// with a message naming the file (and, for a journal, the line: see
// TestDamagedJournalGivesFileAndLine). merge may also say the merged result
// is partial (exit 3).
//
// The seeds are real results and journals (testdata/results, from short
// runs of this tree: one run with counters, three repetitions, the two
// segments of a plan), whole and cut at many offsets and at every line of
// the journals. Inputs the fuzzer found are kept in testdata/fuzz.

// seedFiles are the real results and journals, by name.
func seedFiles(f *testing.F) map[string][]byte {
	f.Helper()
	ents, err := os.ReadDir("testdata/results")
	if err != nil {
		f.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/results", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		out[e.Name()] = b
	}
	if len(out) < 8 {
		f.Fatalf("%d seed files", len(out))
	}
	return out
}

// cuts returns b cut at 12 offsets spread over it, at 1, and after every
// line of a journal.
func cuts(b []byte) [][]byte {
	var out [][]byte
	for k := 0; k < 12; k++ {
		out = append(out, b[:len(b)*k/12])
	}
	out = append(out, b[:1], b)
	if bytes.HasPrefix(b, []byte(`{"kind"`)) {
		for i, c := range b {
			if c == '\n' && i+1 < len(b) {
				out = append(out, b[:i+1], b[:i+1+(len(b)-i-1)/2])
			}
		}
	}
	return out
}

// extremes are the values a number of a seed is set to in its variants.
var extremes = []any{-1.0, 0.0, 1e308, 1e-320, 18446744073709551615.0, -1e300, 1e18}

// variants returns copies of a result (or of one line of a journal) with
// one number set to an extreme each: where byte mutations of JSON rarely
// lead (they mostly break the syntax), and where the reports divide, loop
// and sum.
func variants(b []byte, n int) [][]byte {
	lines := [][]byte{b}
	if bytes.HasPrefix(b, []byte(`{"kind"`)) {
		lines = bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	}
	var out [][]byte
	for i := 0; i < n; i++ {
		li := i % len(lines)
		var doc any
		if json.Unmarshal(lines[li], &doc) != nil {
			continue
		}
		leaves := numberLeaves(doc, nil)
		if len(leaves) == 0 {
			continue
		}
		leaves[(i*7919)%len(leaves)](extremes[i%len(extremes)])
		line, _ := json.Marshal(doc)
		cp := slices.Clone(lines)
		cp[li] = line
		out = append(out, bytes.Join(cp, []byte("\n")))
	}
	return out
}

// numberLeaves returns a setter for every number in a decoded JSON value.
func numberLeaves(v any, out []func(any)) []func(any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if _, ok := x[k].(float64); ok {
				out = append(out, func(n any) { x[k] = n })
			} else {
				out = numberLeaves(x[k], out)
			}
		}
	case []any:
		for i := range x {
			if _, ok := x[i].(float64); ok {
				out = append(out, func(n any) { x[i] = n })
			} else {
				out = numberLeaves(x[i], out)
			}
		}
	}
	return out
}

func addSeeds(f *testing.F) map[string][]byte {
	files := seedFiles(f)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		for _, c := range cuts(b) {
			f.Add(c)
		}
		for _, v := range variants(b, 24) {
			f.Add(v)
		}
	}
	return files
}

// maxAlloc bounds what one command may allocate for n bytes of input.
func maxAlloc(n int) uint64 { return 256<<20 + 4096*uint64(n) }

// checkCommand runs throng with args and checks the outcome's contract.
// files are the inputs: an exit 2 must name one of them.
func checkCommand(t *testing.T, n int, args []string, okCodes []int, files ...string) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	type res struct {
		code           int
		stdout, stderr string
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		var o, e bytes.Buffer
		code := Main(args, &o, &e)
		done <- res{code, o.String(), e.String()}
	}()
	var r res
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("throng %s: no answer after 20 s", strings.Join(args, " "))
	}
	runtime.ReadMemStats(&after)
	if a := after.TotalAlloc - before.TotalAlloc; a > maxAlloc(n) {
		t.Errorf("throng %s: allocated %d MB for %d bytes of input", strings.Join(args, " "), a>>20, n)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("throng %s: took %v", strings.Join(args, " "), d)
	}
	for _, c := range okCodes {
		if r.code == c {
			return
		}
	}
	if r.code != ExitBadInput {
		t.Fatalf("throng %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	named := false
	for _, f := range files {
		// merge names its parts by their base names.
		named = named || strings.Contains(r.stderr, filepath.Base(f))
	}
	if !named || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Fatalf("throng %s: exit 2 with a message that does not name the file in one line:\n%s", strings.Join(args, " "), r.stderr)
	}
}

func FuzzReport(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.json")
		os.WriteFile(p, data, 0o644)
		checkCommand(t, len(data), []string{"report", p}, []int{ExitOK}, p)
		checkCommand(t, len(data), []string{"report", p, "--html", filepath.Join(dir, "r.html")}, []int{ExitOK}, p)
	})
}

func FuzzCompare(f *testing.F) {
	files := addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.json")
		good := filepath.Join(dir, "good.json")
		os.WriteFile(p, data, 0o644)
		os.WriteFile(good, files["one.json"], 0o644)
		// One format per input, by its length: the fuzzer reaches them all.
		format := compare.Formats[len(data)%len(compare.Formats)]
		checkCommand(t, len(data), []string{"compare", good, p, "--format", format}, []int{ExitOK}, p)
		checkCommand(t, len(data), []string{"compare", p, good, p, "--phase", "all"}, []int{ExitOK}, p)
	})
}

func FuzzMerge(f *testing.F) {
	files := addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.json")
		seg1, seg2 := filepath.Join(dir, "seg1.json"), filepath.Join(dir, "seg2.json")
		os.WriteFile(p, data, 0o644)
		os.WriteFile(seg1, files["seg1.json"], 0o644)
		os.WriteFile(seg2, files["seg2.journal.jsonl"], 0o644)
		out := filepath.Join(dir, "merged.json")
		ok := []int{ExitOK, ExitPartial}
		checkCommand(t, len(data), []string{"merge", seg1, p, "-o", out}, ok, p, seg1)
		checkCommand(t, len(data), []string{"merge", p, seg2, "-o", out}, ok, p, seg2)
		checkCommand(t, len(data), []string{"merge", p, "-o", out}, ok, p)
	})
}

// Found by probing with extreme values, before results were checked on
// reading: an HTML report of an interval starting at -1e300 s never ended
// (a time axis of 1e295 ticks), and merging a part of segment 1/1000000000
// listed every missing segment. Both now answer at once.
func TestReadingCommandsOnImpossibleResults(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile("testdata/results/seg1.json")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, change func(run map[string]any)) string {
		var run map[string]any
		json.Unmarshal(seed, &run)
		change(run)
		b, _ := json.Marshal(run)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	interval0 := func(run map[string]any) map[string]any {
		return run["repetitions"].([]any)[0].(map[string]any)["intervals"].([]any)[0].(map[string]any)
	}
	neg := edit("negative.json", func(run map[string]any) { interval0(run)["start_s"] = -1e300 })
	code, _, stderr := throng(t, "report", neg, "--html", filepath.Join(dir, "r.html"))
	if code != ExitBadInput || !strings.Contains(stderr, neg+": repetition 1, interval 0: from -1e+300 s") {
		t.Errorf("report --html of a negative start: exit %d, %s", code, stderr)
	}
	big := edit("big.json", func(run map[string]any) { run["meta"].(map[string]any)["segment"] = "1/1000000000" })
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, stdout, stderr := throng(t, "merge", big, "-o", filepath.Join(dir, "m.json"))
		if code != ExitPartial || !strings.Contains(stdout+stderr, "segments 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 999999989 more of 1000000000 are missing") {
			t.Errorf("merge of segment 1/1000000000: exit %d\n%s\n%s", code, stdout, stderr)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("merge of segment 1/1000000000: no answer after 20 s")
	}
}

// A damaged journal is bad input, and the message gives the file and the
// line.
func TestDamagedJournalGivesFileAndLine(t *testing.T) {
	b, err := os.ReadFile("testdata/results/one.journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		edit func([][]byte) [][]byte
		want string
	}{
		{"a cut line then more", func(l [][]byte) [][]byte { l[3] = l[3][:20]; return l }, ":4: not a whole record"},
		{"no meta first", func(l [][]byte) [][]byte { return l[1:] }, `:1: a journal begins with its meta record, not "repetition"`},
		{"an interval outside its repetition", func(l [][]byte) [][]byte { return append(l[:1], l[2:]...) }, ":2: an interval outside its repetition"},
		{"an unknown record", func(l [][]byte) [][]byte { l[2] = []byte(`{"kind":"mystery"}`); return l }, `:3: unknown record kind "mystery"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".journal.jsonl")
			os.WriteFile(p, bytes.Join(tt.edit(slices.Clone(lines)), []byte("\n")), 0o644)
			for _, args := range [][]string{{"report", p}, {"compare", p, p}, {"merge", p, "-o", filepath.Join(dir, "m.json")}} {
				code, _, stderr := throng(t, args...)
				if code != ExitBadInput || !strings.Contains(stderr, p+tt.want) {
					t.Errorf("%s: exit %d, %q; want 2 and %q", args[0], code, stderr, p+tt.want)
				}
			}
		})
	}
}
