package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// buildThrong builds the throng binary into a temporary directory.
func buildThrong(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "throng")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/throng-io/throng/cmd/throng")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// A run stopped by SIGINT exits 130 and by SIGTERM 143, within about a
// second even at a rate no machine can keep up with (1e9 arrivals/s: the
// arrivals fall behind and are dropped as fast as they can be generated),
// and writes its partial result.
func TestSignalsStopARunAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildThrong(t)
	for _, c := range []struct {
		sig    syscall.Signal
		engine string
		code   int
	}{
		{syscall.SIGINT, "io_uring", ExitInterrupted},
		{syscall.SIGTERM, "io_uring", ExitTerminated},
		{syscall.SIGINT, "goroutines", ExitInterrupted},
		{syscall.SIGTERM, "goroutines", ExitTerminated},
	} {
		t.Run(c.sig.String()+"/"+c.engine, func(t *testing.T) {
			if !engineAvailable(c.engine) {
				if os.Getenv("CI") != "" {
					t.Fatalf("engine %s is not available", c.engine)
				}
				t.Skipf("engine %s is not available", c.engine)
			}
			dir := t.TempDir()
			scen := filepath.Join(dir, "absurd.yaml")
			os.WriteFile(scen, []byte("model: open\nusers: 10\nopen: {rate: 1e9/s}\nphases: {steady: 10m}\nactions: [{path: /}]\n"), 0o644)
			stopAtOnce(t, bin, dir, c.sig, c.code, scen, "--engine", c.engine)
		})
	}
	// The mail family's users (sessions held open, think times of
	// minutes at a speedup) stop as promptly.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String()+"/loadsim-online", func(t *testing.T) {
			code := map[syscall.Signal]int{syscall.SIGINT: ExitInterrupted, syscall.SIGTERM: ExitTerminated}[sig]
			args := append([]string{"loadsim-online", "--users", "200", "--speedup", "600", "--duration", "10m"}, smallMailboxes...)
			stopAtOnce(t, bin, t.TempDir(), sig, code, args...)
		})
	}
}

// stopAtOnce runs `throng run ARGS -q --out DIR/run.json`, sends sig once
// the load has started, and checks that the run ends within 1.5 s with
// exit code, its partial result written.
func stopAtOnce(t *testing.T, bin, dir string, sig syscall.Signal, code int, args ...string) {
	t.Helper()
	out := filepath.Join(dir, "run.json")
	cmd := exec.Command(bin, append(append([]string{"run"}, args...), "-q", "--out", out)...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The load has started when the journal holds an interval.
	journal := filepath.Join(dir, "run.journal.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(journal); err == nil && len(b) > 0 && countLines(b) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the run did not start within 30 s")
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before the signal: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t0 := time.Now()
	cmd.Process.Signal(sig)
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%v: still running 10 s after the signal", sig)
	}
	took := time.Since(t0)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Errorf("%v: %v, want exit code %d", sig, err, code)
	}
	// The partial result is written: a tenth of a second or so on
	// an idle machine; 1.5 s leaves room for a shared one.
	if took > 1500*time.Millisecond {
		t.Errorf("%v: the run took %v to end", sig, took)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result written: %v", err)
	}
	var run struct {
		Partial bool   `json:"partial"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(b, &run); err != nil || !run.Partial {
		t.Errorf("result: %v, partial %v, reason %q", err, run.Partial, run.Reason)
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// When several causes meet at a run's end, the gravest gives the exit
// code: a failure (4) over a signal (130, 143) over failed thresholds (1)
// over a partial run (3) — a run stopped by SIGTERM whose thresholds then
// fail on the partial figures exits 143, not 1.
func TestExitPrecedence(t *testing.T) {
	partial := &result.Run{Partial: true, Reason: "stopped"}
	whole := &result.Run{}
	lost := errors.New("the result could not be written anywhere")
	for _, c := range []struct {
		name     string
		failed   error
		sig      os.Signal
		thFailed int
		run      *result.Run
		code     int
	}{
		{"everything", lost, syscall.SIGTERM, 2, partial, ExitFailure},
		{"failure over SIGINT", lost, os.Interrupt, 0, partial, ExitFailure},
		{"SIGTERM over thresholds", nil, syscall.SIGTERM, 2, partial, ExitTerminated},
		{"SIGINT over thresholds", nil, os.Interrupt, 1, partial, ExitInterrupted},
		{"SIGINT over partial", nil, os.Interrupt, 0, partial, ExitInterrupted},
		{"thresholds over partial", nil, nil, 1, partial, ExitThresholds},
		{"partial", nil, nil, 0, partial, ExitPartial},
		{"done", nil, nil, 0, whole, ExitOK},
	} {
		err := exitPrecedence(c.failed, c.sig, c.thFailed, 3, c.run)
		code := ExitOK
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		} else if err != nil {
			code = -1
		}
		if code != c.code {
			t.Errorf("%s: exit %d (%v), want %d", c.name, code, err, c.code)
		}
	}
}
