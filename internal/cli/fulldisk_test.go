package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
	"github.com/throng-io/throng/internal/textfmt"
)

// fullDiskScenario records about 30 intervals of 1-2 KB each (with the
// machine's counters): more than the room left on the disk.
const fullDiskScenario = `name: full
users: 2
interval: 100ms
closed: {think: 10ms}
phases: {steady: 3s}
actions: [{name: a, path: /one.html}, {name: b, path: /one.html}]
`

func fullDiskRun(t *testing.T, tmpdir string) (out, journal string, code int, stdout, stderr string) {
	t.Helper()
	disk := testenv.Tmpfs(t, 1<<20)
	testenv.Fill(t, disk, 24<<10)
	t.Setenv("TMPDIR", tmpdir)
	file := filepath.Join(t.TempDir(), "full.yaml")
	os.WriteFile(file, []byte(fullDiskScenario), 0o644)
	out = filepath.Join(disk, "r.json")
	code, stdout, stderr = throng(t, "run", file, "-q", "-o", out)
	return out, result.JournalPath(out), code, stdout, stderr
}

// The journal's disk fills up during the run: the run goes on, the result
// goes to the system's temporary directory with every interval, and each
// message says what is true — where the result is, how much of the journal
// its file holds. Exit 4: the result is not where it was asked for.
func TestFullDiskResultGoesToTheTempDir(t *testing.T) {
	tmp := t.TempDir()
	out, journal, code, stdout, stderr := fullDiskRun(t, tmp)
	fallback := filepath.Join(tmp, "r.json")
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, want := range []string{
		"Result: " + fallback + " — written there because " + out + " could not be written (" + out + ": no space left on device)",
		"The journal " + journal + " is incomplete: its file holds ",
		"; the result file holds every interval.",
		"actions/s",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, lie := range []string{"No repetition was recorded", "everything recorded is in the journal"} {
		if strings.Contains(stdout+stderr, lie) {
			t.Errorf("says %q:\n%s\n%s", lie, stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "the journal's file refuses records (write "+journal+": no space left on device): the run goes on") ||
		!strings.Contains(stderr, "it was written to "+fallback) {
		t.Errorf("stderr:\n%s", stderr)
	}
	m := regexp.MustCompile(`its file holds (\d+) of the run's (\d+) intervals`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no interval counts in:\n%s", stdout)
	}
	inFile, made := atoi(m[1]), atoi(m[2])
	if inFile >= made || made < 20 {
		t.Errorf("the journal's file holds %d of %d intervals", inFile, made)
	}
	run, err := result.ReadFile(fallback)
	if err != nil {
		t.Fatal(err)
	}
	rep := run.Repetitions[0]
	all := result.Find(rep.Summaries, result.All)
	var counted uint64
	for _, iv := range rep.Intervals {
		acts := iv.Finished() // whatever phase they count in
		counted += acts[0].Count + acts[1].Count
	}
	if len(rep.Intervals) != made || all.Intervals != made || counted != all.Total.Count || counted == 0 || run.Partial {
		t.Errorf("fallback result: %d intervals (summary %d, journal made %d), %d actions in them, %d in the summary, partial %v",
			len(rep.Intervals), all.Intervals, made, counted, all.Total.Count, run.Partial)
	}
	if !strings.Contains(stdout, textfmt.Num(float64(all.Total.Count))+" actions") {
		t.Errorf("the printed summary does not give the result's %d actions:\n%s", all.Total.Count, stdout)
	}
	// What is in the journal's file is a valid (cut) journal of the start.
	cut, err := result.ReadFile(journal)
	if err != nil || len(cut.Repetitions[0].Intervals) != inFile || !cut.Partial {
		t.Errorf("the journal's file: %v", err)
	}
	// The result and the journal have the same mode.
	a, _ := os.Stat(fallback)
	b, _ := os.Stat(journal)
	if a.Mode().Perm() != b.Mode().Perm() {
		t.Errorf("result mode %v, journal mode %v", a.Mode().Perm(), b.Mode().Perm())
	}
}

// With the temporary directory unusable too, the result is written
// nowhere: the summary is printed from memory and the messages say so,
// naming both places and why.
func TestFullDiskNowhereToWrite(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(notDir, nil, 0o644)
	out, journal, code, stdout, _ := fullDiskRun(t, notDir)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, want := range []string{
		"No result file: it could not be written (" + out + ": no space left on device; " + filepath.Join(notDir, "r.json") + ": not a directory). The summary above was made from memory.",
		"The journal " + journal + " is incomplete: its file holds ",
		"; the rest was lost when throng ended.",
		"actions/s",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// A disk full before the start: nothing is run, and the message says so.
func TestFullDiskBeforeTheStart(t *testing.T) {
	disk := testenv.Tmpfs(t, 64<<10)
	testenv.Fill(t, disk, 0)
	out := filepath.Join(disk, "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--iterations", "10", "-q", "-o", out)
	if code != ExitFailure || !strings.Contains(stderr, "no space left on device; nothing was run") || strings.Contains(stdout, "actions/s") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(result.JournalPath(out)); err == nil {
		t.Errorf("an empty journal was left")
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
