package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// binary is the throng command built once for the tests that need a real
// process: signals, kill -9, serve.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "throng-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "throng")
	build := exec.Command("go", "build", "-o", binary, "github.com/throng-io/throng/cmd/throng")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building throng:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// longScenario runs for a minute at most, so the tests stop it.
const longScenario = `
name: long
users: 2
interval: 200ms
closed: {think: 1ms}
phases: {steady: 1m}
actions: [{path: /one.html}]
`

// startLong starts a long run in its own process and waits until its
// journal holds at least n intervals.
func startLong(t *testing.T, n int) (cmd *exec.Cmd, out string, stdout *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "long.yaml")
	os.WriteFile(file, []byte(longScenario), 0o644)
	out = filepath.Join(dir, "long.json")
	cmd = exec.Command(binary, "run", file, "-o", out, "--engine", "goroutines")
	stdout = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(result.JournalPath(out))
		if bytes.Count(b, []byte(`"kind":"interval"`)) >= n {
			return cmd, out, stdout
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the journal did not reach %d intervals", n)
	return
}

// Ctrl-C (SIGINT) stops the run cleanly: the result file is written, marked
// partial, the summary printed, and the exit code says "interrupted".
func TestInterruptWritesPartialResult(t *testing.T) {
	t.Parallel()
	cmd, out, stdout := startLong(t, 3)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v to stop after SIGINT", time.Since(start))
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Errorf("exit: %v, want %d", err, ExitInterrupted)
	}
	run, rerr := result.ReadFile(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if !run.Partial || !strings.Contains(run.Reason, "interrupted") || all.Total.Count == 0 {
		t.Errorf("partial=%v reason=%q count=%d", run.Partial, run.Reason, all.Total.Count)
	}
	if !strings.Contains(stdout.String(), "PARTIAL RESULT") {
		t.Errorf("summary does not say partial:\n%s", stdout)
	}
}

// A run killed with kill -9 halfway leaves a journal from which `throng
// report` produces the summary, marked partial.
func TestKill9LeavesAReadableJournal(t *testing.T) {
	t.Parallel()
	cmd, out, _ := startLong(t, 3)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a result file exists after kill -9; the test proves nothing")
	}
	rep := exec.Command(binary, "report", out)
	b, err := rep.CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	text := string(b)
	for _, want := range []string{"reading its journal", "PARTIAL RESULT", "cut short", "actions/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	run, err := result.ReadFile(result.JournalPath(out))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(run.Repetitions[0].Intervals); n < 3 {
		t.Errorf("%d intervals in the journal, want at least 3", n)
	}
	if all := result.Find(run.Repetitions[0].Summaries, result.All); all.Total.Count == 0 {
		t.Error("no action in the journal")
	}
}

// `throng serve web` runs the embedded server in its own process.
func TestServeWeb(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "web", "--listen", "127.0.0.1:0")
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line) // serving web at http://127.0.0.1:PORT (pid N); ...
	if len(f) < 4 {
		t.Fatalf("first line %q", line)
	}
	resp, err := http.Get(f[3] + "/one.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "x" {
		t.Errorf("body %q", body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve exited with %v after SIGTERM", err)
	}
}

// `throng serve web-shop` serves the demo shop in its own process, and the
// web-shop preset goes through it as through the embedded one.
func TestServeWebShop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "web-shop", "--listen", "127.0.0.1:0")
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line) // serving web-shop at http://127.0.0.1:PORT (under /shop/; pid N); ...
	if len(f) < 5 || f[4] != "(under" {
		t.Fatalf("first line %q", line)
	}
	out := filepath.Join(t.TempDir(), "shop.json")
	code, stdout, stderr := throng(t, "run", "web-shop", "--target", f[3], "--users", "3", "--iterations", "3", "--set", "think=0s", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if all.Total.Errors != 0 || all.Total.Count < 9*2 {
		t.Errorf("%d actions, %d errors", all.Total.Count, all.Total.Errors)
	}
}
