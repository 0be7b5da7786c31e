package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// smbScenario is the SMB study scaled down: one user copies files files, runs
// times, reusing the population.
func smbScenario(t *testing.T, files, runs int, extra string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "smb.yaml")
	trim := 0
	if runs >= 3 {
		trim = 1
	}
	src := strings.NewReplacer("FILES", strconv.Itoa(files), "RUNS", strconv.Itoa(runs), "TRIM", strconv.Itoa(trim)).Replace(`name: smb-small
users: 1
closed: {iterations: FILES}
runs: RUNS
trim: TRIM
files:
  population: {files: FILES, size: 20488}
  reuse: true
`) + extra + "actions:\n  - {name: copy, op: copy-down}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// smb-smallfiles is the SMB study (docs/studies.md): 50,000 files of 20,488 bytes copied over one
// connection, 5 runs, the mean of the middle 3.
func TestSmbSmallfilesIsTheSMBStudy(t *testing.T) {
	s, err := loadScenario("smb-smallfiles")
	if err != nil {
		t.Fatal(err)
	}
	if s.Users != 1 || s.Closed.Iterations != 50_000 || s.Runs != 5 || s.Trim != 1 || s.Driver != "files" || s.Model != "closed" {
		t.Errorf("users %d iterations %d runs %d trim %d driver %s", s.Users, s.Closed.Iterations, s.Runs, s.Trim, s.Driver)
	}
	job, err := prepareArg(t, nil, "smb-smallfiles", setting("target", "file://localhost/tmp/throng-preset-check"))
	if err != nil {
		t.Fatal(err)
	}
	d := job.Driver.(interface{ Describe() map[string]string }).Describe()
	if d["files"] != "50000" || d["size"] != "20488" || d["reuse"] != "true" || d["verify"] != "true" || len(job.Actions) != 1 {
		t.Errorf("settings %v", d)
	}
}

// The preset with its defaults scaled down (--set files): against the
// embedded target, a temporary local directory.
func TestSmbSmallfilesScaled(t *testing.T) {
	run := runResult(t, "run", "smb-smallfiles", "--set", "files=400", "--size", "4KiB")
	if len(run.Repetitions) != 5 || run.Aggregate == nil || len(run.Aggregate.Kept) != 3 {
		t.Fatalf("repetitions %d aggregate %+v", len(run.Repetitions), run.Aggregate)
	}
	for i, rep := range run.Repetitions {
		all := result.Find(rep.Summaries, result.All)
		if all.Total.Count != 400 || all.Total.Errors != 0 {
			t.Errorf("run %d: %d copies, %d errors %v", i+1, all.Total.Count, all.Total.Errors, all.Total.Messages)
		}
	}
	if s := run.Meta.Settings; s["files"] != "400" || s["size"] != "4096" {
		t.Errorf("settings %v", s)
	}
}

// A local directory: every copy counted and its bytes; runs ranked by
// elapsed time; the driver's settings in the result.
func TestFilesLocalRun(t *testing.T) {
	dir := t.TempDir()
	run := runResult(t, "run", smbScenario(t, 200, 3, ""), "--target", "file://localhost"+dir+"/pop", "--users", "2", "--iterations", "100")
	if len(run.Repetitions) != 3 || run.Aggregate == nil || run.Aggregate.RankedBy != "elapsed_s" || len(run.Aggregate.Kept) != 1 {
		t.Fatalf("repetitions %d aggregate %+v", len(run.Repetitions), run.Aggregate)
	}
	for i := range run.Repetitions {
		all := result.Find(run.Repetitions[i].Summaries, result.All)
		if all.Total.Count != 200 || all.Total.Errors != 0 {
			t.Errorf("run %d: %d copies, %d errors %v", i+1, all.Total.Count, all.Total.Errors, all.Total.Messages)
		}
		if got := all.Total.BytesInPerS * all.DurationS; got < 200*20488*0.99 || got > 200*20488*1.01 {
			t.Errorf("run %d: %.0f bytes received, want %d", i+1, got, 200*20488)
		}
	}
	if run.Meta.Driver != "files" || run.Meta.Settings["protocol"] != "local file system" || run.Meta.Settings["files"] != "200" {
		t.Errorf("meta %s %v", run.Meta.Driver, run.Meta.Settings)
	}
}

// traversableDir is a fresh directory that the share's user can reach
// (t.TempDir's parents are private to root).
func traversableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "throng-files-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	return dir
}

// Two smbd configurations side by side on the same files, driven by the
// same scenario (the SMB study's preset, scaled down), then compared: SMB
// 2.0.2 against SMB 3.1.1 with every message encrypted.
func TestFilesSambaAB(t *testing.T) {
	share := traversableDir(t)
	a := testenv.Samba(t, testenv.SambaOptions{MaxProtocol: "SMB2_02", ShareDir: share})
	b := testenv.Samba(t, testenv.SambaOptions{Encrypt: "required", ShareDir: share})
	out := t.TempDir()
	runs := map[string]*result.Run{}
	for _, side := range []struct {
		label, negotiated string
		srv               *testenv.SambaServer
	}{{"smb2.0.2", "SMB 2.0.2, not signed, not encrypted", a}, {"smb3.1.1-encrypted", "SMB 3.1.1, not signed, encrypted", b}} {
		t.Setenv("SMB_PASSWORD", side.srv.Password)
		f := filepath.Join(out, side.label+".json")
		code, stdout, stderr := throng(t, "run", "smb-smallfiles", "--set", "files=300", "--runs", "3",
			"--target", side.srv.URL+"/smallfiles", "--label", side.label, "-q", "-o", f)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", side.label, code, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, side.srv.Password) {
			t.Errorf("%s: the password is in the output", side.label)
		}
		if !strings.Contains(stdout, "\nNegotiated with the server: "+side.negotiated+".\n") {
			t.Errorf("%s: the summary does not say what was negotiated:\n%s", side.label, stdout)
		}
		run, err := result.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), side.srv.Password) {
			t.Errorf("%s: the password is in the result file", side.label)
		}
		for i, rep := range run.Repetitions {
			all := result.Find(rep.Summaries, result.All)
			if all.Total.Count != 300 || all.Total.Errors != 0 {
				t.Errorf("%s run %d: %d copies, %d errors %v", side.label, i+1, all.Total.Count, all.Total.Errors, all.Total.Messages)
			}
		}
		if len(run.Repetitions) != 3 || run.Aggregate == nil || len(run.Aggregate.Kept) != 1 || run.Aggregate.RankedBy != "elapsed_s" {
			t.Errorf("%s: %d repetitions, aggregate %+v", side.label, len(run.Repetitions), run.Aggregate)
		}
		runs[side.label] = run
	}
	if s := runs["smb2.0.2"].Meta.Settings; s["negotiated_dialect"] != "2.0.2" || s["encrypted"] != "false" {
		t.Errorf("A settings %v", s)
	}
	if s := runs["smb3.1.1-encrypted"].Meta.Settings; s["negotiated_dialect"] != "3.1.1" || s["encrypted"] != "true" {
		t.Errorf("B settings %v", s)
	}
	code, stdout, stderr := throng(t, "compare", filepath.Join(out, "smb2.0.2.json"), filepath.Join(out, "smb3.1.1-encrypted.json"))
	if code != ExitOK {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Comparing 2 configurations", "smb2.0.2", "smb3.1.1-encrypted", "actions/s", "latency p99", "verdict",
		"settings.encrypted: false → true", "settings.negotiated_dialect: 2.0.2 → 3.1.1", "verified MB/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, stdout)
		}
	}
	t.Logf("\n%s", stdout)
}

// Bad input and a bad target give one clear message and the right exit
// code; the password never shows.
func TestFilesBadInput(t *testing.T) {
	srv := testenv.Samba(t, testenv.SambaOptions{})
	scen := smbScenario(t, 10, 1, "")
	t.Setenv("SMB_PASSWORD", "not-"+srv.Password[:6])
	code, stdout, stderr := throng(t, "run", scen, "--target", srv.URL+"/x", "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
	if code != ExitFailure || !strings.Contains(stderr, `the server refused user "throng" with this password`) ||
		strings.Contains(stdout+stderr, "not-"+srv.Password[:6]) {
		t.Errorf("wrong password: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Setenv("SMB_PASSWORD", srv.Password)
	code, _, stderr = throng(t, "run", scen, "--target", strings.Replace(srv.URL, "/share", "/nope", 1), "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
	if code != ExitFailure || !strings.Contains(stderr, `the server has no share "nope"`) {
		t.Errorf("no such share: exit %d\n%s", code, stderr)
	}
	code, _, stderr = throng(t, "run", scen, "--target", "http://127.0.0.1:9", "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
	if code != ExitFailure || !strings.Contains(stderr, "the files family reads smb://") {
		t.Errorf("http target: exit %d\n%s", code, stderr)
	}
	code, _, stderr = throng(t, "run", smbScenario(t, 10, 1, "  password: hunter2\n"), "--target", srv.URL, "-q")
	if code != ExitBadInput || !strings.Contains(stderr, "smb.yaml:9:3: files.password: write where the password is read from") {
		t.Errorf("a password in the file: exit %d\n%s", code, stderr)
	}
	code, _, stderr = throng(t, "run", scen, "--target", "smb://throng:"+srv.Password+"@"+srv.Addr+"/share", "-q")
	if code == ExitOK || strings.Contains(stderr, srv.Password) || !strings.Contains(stderr, "holds a password") {
		t.Errorf("a password in the target: exit %d\n%s", code, stderr)
	}
}

// A full disk on the client side (write_to) is counted as errors of class
// other with the reason; the run goes on.
func TestFilesClientDiskFull(t *testing.T) {
	dir, copies := t.TempDir(), t.TempDir()
	testenv.DevFull(t, filepath.Join(copies, "f00000004.bin"))
	run := runResult(t, "run", smbScenario(t, 10, 1, "  write_to: "+copies+"\n"), "--target", "file://localhost"+dir)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if all.Total.Count != 10 || all.Total.Errors != 1 || all.Total.ErrorsByClass["other"] != 1 ||
		!strings.Contains(all.Total.Messages["other"], "no space left on the client's disk") {
		t.Errorf("count %d errors %d %v %v", all.Total.Count, all.Total.Errors, all.Total.ErrorsByClass, all.Total.Messages)
	}
}

// A steady-state mixed profile (NetBench-like): each user in its own
// directory, every operation at its own per-user rate.
func TestFilesMixedProfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mixed.yaml")
	os.WriteFile(f, []byte(`name: files-mixed
users: 4
model: open
interval: 500ms
phases: {steady: 1500ms}
files:
  population: {files: 50, per_user: true, tree: {depth: 1, width: 5}, distribution: uniform, min: 1KB, max: 64KB}
actions:
  - {name: open, op: open, rate: 40/s}
  - {name: read, op: read, bytes: 4KiB, rate: 40/s}
  - {name: write, op: write, bytes: 4KiB, rate: 20/s}
  - {name: stat, op: stat, rate: 40/s}
  - {name: rename, op: rename, rate: 10/s}
  - {name: create, op: copy-up, rate: 10/s}
  - {name: delete, op: delete, from: uploads, rate: 5/s}
  - {name: list, op: walk, rate: 5/s}
`), 0o644)
	run := runResult(t, "run", f, "--target", "file://localhost"+t.TempDir())
	s := result.Find(run.Repetitions[0].Summaries, result.All)
	// 4 users x 170/s x 1.5 s: about 1,000 operations.
	if s.Total.Count < 600 || s.Total.Count > 1400 {
		t.Errorf("%d operations", s.Total.Count)
	}
	for i, a := range s.Actions {
		if a.Count == 0 || a.Errors > a.ErrorsByClass["skipped"] {
			t.Errorf("action %d: %d done, errors %v %v", i, a.Count, a.ErrorsByClass, a.Messages)
		}
	}
}

// The reproduction of a panic: Samba with "server smb encrypt = desired"
// and the client pinned to SMB 2.0.2. The library cannot encrypt there;
// throng refuses before the run with a message that says what to change
// (exit 4), never a panic.
func TestFilesEncryptDesiredOnSMB2(t *testing.T) {
	srv := testenv.Samba(t, testenv.SambaOptions{Encrypt: "desired"})
	t.Setenv("SMB_PASSWORD", srv.Password)
	code, stdout, stderr := throng(t, "run", smbScenario(t, 10, 1, "  dialect: \"2.0.2\"\n"), "--target", srv.URL+"/x", "-q",
		"-o", filepath.Join(t.TempDir(), "r.json"))
	if code != ExitFailure || !strings.Contains(stderr, "the server asks that the session be encrypted (Samba: server smb encrypt = desired or required), "+
		"but the dialect it negotiated, 2.0.2, has no encryption") || strings.Contains(stdout+stderr, "panic") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
