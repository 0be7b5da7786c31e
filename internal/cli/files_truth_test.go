package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// runFiles runs throng and reads its result, whatever the exit code.
func runFiles(t *testing.T, args ...string) (int, string, *result.Run) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, append(args, "-o", out)...)
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("throng %v: exit %d, no result: %v\n%s\n%s", args, code, err, stdout, stderr)
	}
	return code, stdout, run
}

// corruptOnDisk flips one byte of each file where the server keeps it:
// the size stays, so a listing cannot tell.
func corruptOnDisk(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		f.ReadAt(b, 100)
		b[0] ^= 0x5A
		if _, err := f.WriteAt(b, 100); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// filesTargets are a Samba share and a local directory, each with the
// directory where the population is kept on disk.
func filesTargets(t *testing.T) []struct{ name, target, dir string } {
	share := traversableDir(t)
	srv := testenv.Samba(t, testenv.SambaOptions{ShareDir: share})
	t.Setenv("SMB_PASSWORD", srv.Password)
	local := t.TempDir()
	return []struct{ name, target, dir string }{
		{"samba", srv.URL + "/pop", filepath.Join(share, "pop")},
		{"local", "file://localhost" + local + "/pop", filepath.Join(local, "pop")},
	}
}

// A copy with corrupt data fails the run: three files corrupted on the
// server's disk after the population was written (and kept: reuse) give
// exactly 3 errors of class corrupt and exit code 1, through the files
// family's default threshold, shown like any other. A threshold of the
// scenario on corrupt replaces the default.
func TestFilesCorruptionFailsTheRun(t *testing.T) {
	for _, tc := range filesTargets(t) {
		t.Run(tc.name, func(t *testing.T) {
			scen := smbScenario(t, 40, 1, "")
			code, stdout, run := runFiles(t, "run", scen, "--target", tc.target)
			if code != ExitOK || len(run.Thresholds) != 1 || !run.Thresholds[0].Default || !run.Thresholds[0].Pass ||
				run.Thresholds[0].Threshold != "all: corrupt == 0" || float64(run.Thresholds[0].Value) != 0 {
				t.Fatalf("a good copy: exit %d, thresholds %+v\n%s", code, run.Thresholds, stdout)
			}
			corruptOnDisk(t, tc.dir, "f00000003.bin", "f00000017.bin", "f00000031.bin")
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			if code != ExitThresholds || all.Total.Count != 40 || all.Total.ErrorsByClass["corrupt"] != 3 || all.Total.Errors != 3 {
				t.Errorf("3 corrupt files: exit %d, %d copies, errors %v\n%s", code, all.Total.Count, all.Total.ErrorsByClass, stdout)
			}
			if o := run.Thresholds; len(o) != 1 || o[0].Pass || float64(o[0].Value) != 3 || !o[0].Default {
				t.Errorf("thresholds %+v", o)
			}
			for _, want := range []string{"FAIL  all: all: corrupt == 0 (default) — corrupt in the all phase is 3: not == 0",
				"(default): the files family judges every run by it", "byte 100 differs from what was written"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the summary lacks %q:\n%s", want, stdout)
				}
			}
			// The user's own limit replaces the default; corrupt >= 0 lets
			// any count pass, still shown.
			for _, th := range []string{"all: corrupt <= 3", "corrupt >= 0"} {
				code, stdout, run = runFiles(t, "run", scen, "--target", tc.target, "--threshold", th)
				if code != ExitOK || len(run.Thresholds) != 1 || run.Thresholds[0].Default || float64(run.Thresholds[0].Value) != 3 {
					t.Errorf("--threshold %q: exit %d, thresholds %+v\n%s", th, code, run.Thresholds, stdout)
				}
			}
			code, _, run = runFiles(t, "run", scen, "--target", tc.target, "--threshold", "all: corrupt < 3")
			if code != ExitThresholds || len(run.Thresholds) != 1 || run.Thresholds[0].Pass {
				t.Errorf("corrupt < 3: exit %d, thresholds %+v", code, run.Thresholds)
			}
		})
	}
}

// Files repaired before a run are reported: a kept population with one
// file removed and one cut short on the server's disk is repaired by the
// next run's preparation, which says how many and which, in the summary
// and in the result; the copies then pass.
func TestFilesRepairedReported(t *testing.T) {
	for _, tc := range filesTargets(t) {
		t.Run(tc.name, func(t *testing.T) {
			scen := smbScenario(t, 40, 1, "")
			code, stdout, run := runFiles(t, "run", scen, "--target", tc.target)
			p := run.Repetitions[0].Preparation
			if code != ExitOK || p == nil || p.Items != 40 || p.Bytes != 40*20488 || p.Checked != 0 || p.Repaired != 0 ||
				!strings.Contains(stdout, "Data set before the run:\n  40 files written (819.5 KB in ") {
				t.Fatalf("first run: exit %d, preparation %+v\n%s", code, p, stdout)
			}
			if err := os.Remove(filepath.Join(tc.dir, "f00000005.bin")); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(tc.dir, "f00000009.bin"), 100); err != nil {
				t.Fatal(err)
			}
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			p = run.Repetitions[0].Preparation
			want := []string{"f00000005.bin: missing", "f00000009.bin: 100 bytes, 20488 expected"}
			if code != ExitOK || p == nil || p.Checked != 40 || p.Repaired != 2 || p.Items != 2 || p.Bytes != 2*20488 ||
				strings.Join(p.RepairedFiles, "|") != strings.Join(want, "|") {
				t.Errorf("repair: exit %d, preparation %+v\n%s", code, p, stdout)
			}
			if !strings.Contains(stdout, "kept from an earlier run: 40 files checked by listing, 2 repaired, written again (41.0 KB in ") ||
				!strings.Contains(stdout, "f00000005.bin: missing; f00000009.bin: 100 bytes, 20488 expected.") {
				t.Errorf("the summary does not name the repairs:\n%s", stdout)
			}
			if all := result.Find(run.Repetitions[0].Summaries, result.All); all.Total.Count != 40 || all.Total.Errors != 0 {
				t.Errorf("after the repair: %d copies, errors %v", all.Total.Count, all.Total.ErrorsByClass)
			}
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			if p = run.Repetitions[0].Preparation; code != ExitOK || p == nil || p.Checked != 40 || p.Repaired != 0 || p.Items != 0 ||
				!strings.Contains(stdout, "kept from an earlier run: 40 files checked by listing, none repaired.") {
				t.Errorf("nothing to repair: exit %d, preparation %+v\n%s", code, p, stdout)
			}
		})
	}
}
