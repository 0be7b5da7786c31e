package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/targets/web"
)

// webTarget starts the reference web server in this process, as a target
// of its own (not "embedded").
func webTarget(t *testing.T) string {
	t.Helper()
	srv, err := web.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.URL()
}

// Without a server measured there is no server cost: no cost row (this
// machine less throng's CPU is other tenants' load too), and the report
// says how to measure one. An embedded target's cost is inside throng's:
// the report says so, and a server process or node_exporter is refused.
func TestNoServerCostUnlessMeasured(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "web-static", "--target", webTarget(t), "--iterations", "2000", "--users", "2", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range run.Repetitions[0].Summaries {
		for _, r := range s.Server {
			switch r.ID {
			case "server_cores", "cpu_ms_per_action", "cores_per_1000_users", "users_per_core", "net_bytes_per_action", "disk_transfers_per_action":
				t.Errorf("%s: %s (%s) with no server measured", s.Phase, r.ID, r.Source)
			}
		}
	}
	if !strings.Contains(stdout, "Server cost: not measured. Give --server-process NAME|PID or --node-exporter URL") {
		t.Errorf("the report does not say the server cost was not measured:\n%s", stdout)
	}

	code, stdout, _ = throng(t, "run", "web-static", "--iterations", "2000", "--users", "2", "-o", filepath.Join(t.TempDir(), "e.json"))
	if code != 0 || !strings.Contains(stdout, "The target ran inside the throng process: the client CPU figures include the server's, and no server cost is given.") ||
		strings.Contains(stdout, "Server cost: not measured") || strings.Contains(stdout, "server CPU-ms per action") {
		t.Errorf("embedded: exit %d\n%s", code, stdout)
	}
	for _, flag := range []string{"--server-process", "--node-exporter"} {
		value := map[string]string{"--server-process": "1", "--node-exporter": "http://127.0.0.1:9/metrics"}[flag]
		code, _, stderr := throng(t, "run", "web-static", "--iterations", "10", flag, value, "-o", filepath.Join(t.TempDir(), "x.json"))
		if code != ExitBadInput || !strings.Contains(stderr, "the target is embedded: the server runs inside this throng") || !strings.Contains(stderr, flag) {
			t.Errorf("embedded with %s: exit %d\n%s", flag, code, stderr)
		}
	}
}

// --server-process NAME never measures the generator: a name that only
// this throng has is refused before the run (exit 2), naming its PID; a
// name another process has measures that process, and the result and the
// report say which PID it matched.
func TestServerProcessIsNeverTheGenerator(t *testing.T) {
	dir := t.TempDir()
	tag := strconv.Itoa(os.Getpid() % 100000)
	// The throng binary under a name nothing else has.
	self := filepath.Join(dir, "thrgen"+tag)
	if b, err := os.ReadFile(binary); err != nil || os.WriteFile(self, b, 0o755) != nil {
		t.Fatal(err)
	}
	target := webTarget(t)
	cmd := exec.Command(self, "run", "web-static", "--target", target, "--iterations", "10", "--users", "1",
		"--server-process", "thrgen"+tag, "-q", "-o", filepath.Join(dir, "g.json"))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != ExitBadInput ||
		!strings.Contains(string(out), `the only process named "thrgen`+tag+`" is this throng (PID `+strconv.Itoa(cmd.Process.Pid)+`)`) {
		t.Errorf("--server-process naming throng itself: exit %d\n%s", code, out)
	}

	// A server of that name outside throng's tree (init adopts it).
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	server := filepath.Join(dir, "thrsrv"+tag)
	os.Symlink(sleep, server)
	pidOut, err := exec.Command("bash", "-c", `"$0" 60 </dev/null >/dev/null 2>&1 & echo $!`, server).Output()
	pid, perr := strconv.Atoi(strings.TrimSpace(string(pidOut)))
	if err != nil || perr != nil {
		t.Fatalf("starting the server: %v %v", err, perr)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	res, file := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte("users: 2\ninterval: 250ms\nclosed: {think: 1ms}\nphases: {steady: 1s}\nactions: [{path: /}]\n"), 0o644)
	code, stdout, stderr := throng(t, "run", file, "--target", target, "--server-process", "thrsrv"+tag, "-o", res)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, err := result.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	var roots []int
	for _, c := range all.Counters {
		if c.Source == "process thrsrv"+tag {
			roots = c.Roots()
		}
	}
	if len(roots) != 1 || roots[0] != pid {
		t.Errorf("matched %v, want [%d]", roots, pid)
	}
	if want := "process thrsrv" + tag + " matched PID " + strconv.Itoa(pid) + " (with their children)."; !strings.Contains(stdout, want) {
		t.Errorf("the report lacks %q:\n%s", want, stdout)
	}
	if r := all.FindRow("server_cores"); r == nil || r.Source != "process thrsrv"+tag {
		t.Errorf("server cost from %+v, want the process", r)
	}
}
