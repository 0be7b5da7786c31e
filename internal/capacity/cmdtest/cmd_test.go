// Package cmdtest tests the capacity search through the command, as a
// user runs it (cli.Main: throng capacity, with its flags and exit
// codes), against the capacity-truth target whose answers are known. It
// is a package of its own so that these searches, a minute each, run
// beside the other packages' tests and within their own time limit.
package cmdtest

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/capacity/capacitytest"
	"github.com/throng-io/throng/internal/cli"
	"github.com/throng-io/throng/internal/targets/capacitytruth"
)

// The exit codes of the command.
const (
	ExitOK         = cli.ExitOK
	ExitThresholds = cli.ExitThresholds
	ExitBadInput   = cli.ExitBadInput
	ExitPartial    = cli.ExitPartial
	ExitFailure    = cli.ExitFailure
)

// throng runs the command in this process and returns its exit code and
// output.
func throng(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// capacitySearch runs `throng capacity` in this process on a scenario of
// the capacity-truth target at url (model lines given), with --out, and
// returns its exit code, output and the record written. The test's
// threads run in the real-time class where they may (capacitytest.Boost).
func capacitySearch(t *testing.T, url, model string, args ...string) (code int, stdout, stderr string, rec *capacity.Record) {
	t.Helper()
	return capacitySearchBoosted(t, true, url, model, args...)
}

// capacitySearchBoosted is capacitySearch, its threads in the real-time
// class only when boost.
func capacitySearchBoosted(t *testing.T, boost bool, url, model string, args ...string) (code int, stdout, stderr string, rec *capacity.Record) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "truth.yaml")
	src := fmt.Sprintf("name: truth\ntarget: %s\ninterval: 500ms\n%s\nphases: {ramp_up: {duration: 500ms}, steady: 4s}\nweb: {timeout: 10s}\nactions: [{name: get, path: /}]\n", url, model)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cap.json")
	boosted := false
	if boost {
		var undo func()
		undo, boosted = capacitytest.Boost()
		defer undo()
	}
	start := time.Now()
	code, stdout, stderr = throng(t, append([]string{"capacity", file, "--out", out}, args...)...)
	t.Logf("throng capacity %s: exit %d after %s (real-time class: %v)\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Second), boosted, stderr, stdout)
	if r, err := capacity.ReadRecordFile(out); err == nil {
		rec = r
	} else if code != ExitBadInput && code != ExitFailure {
		t.Fatalf("the record --out wrote cannot be read back: %v", err)
	}
	return code, stdout, stderr, rec
}

// starvedRecord reports whether a search ended without an answer because
// the generator was bound (other processes of a shared machine kept it
// from a CPU), which it must then say.
func starvedRecord(t *testing.T, rec *capacity.Record) bool {
	switch rec.Status {
	case capacity.GeneratorLimited, capacity.Unmeasurable, capacity.Budget, capacity.Imprecise:
	default:
		return false
	}
	for _, s := range rec.Steps {
		for _, iv := range s.Invalid {
			if iv.Kind == capacity.GeneratorBound {
				if rec.Status == capacity.GeneratorLimited && !strings.Contains(rec.Statement, "generator") {
					t.Errorf("the generator was bound and the statement does not say so: %s", rec.Statement)
				}
				return true
			}
		}
	}
	return false
}

// truthSearch runs a search through the command (twice at most: once
// more when the generator was starved the first time) and checks it found
// the truth: exit 0, status found, the capacity within ±5 % and its 95 %
// interval holding it.
func truthSearch(t *testing.T, truth float64, run func() (int, *capacity.Record)) *capacity.Record {
	t.Helper()
	var code int
	var rec *capacity.Record
	for attempt := 1; attempt <= 2; attempt++ {
		code, rec = run()
		if !starvedRecord(t, rec) {
			break
		}
		t.Logf("attempt %d: the generator was bound, and the search said so", attempt)
	}
	v, lo, hi := float64(rec.Max.Value), float64(rec.Max.CI95[0]), float64(rec.Max.CI95[1])
	switch {
	case starvedRecord(t, rec):
		t.Fatalf("the load generator was bound in both attempts: nothing was proven")
	case code != ExitOK || rec.Status != capacity.Found:
		t.Fatalf("exit %d, status %s: want 0, found (truth %g)", code, rec.Status, truth)
	case !(lo <= truth && truth <= hi):
		t.Fatalf("the 95 %% interval [%g, %g] misses the truth %g", lo, hi, truth)
	case math.Abs(v/truth-1) > 0.05:
		t.Fatalf("found %g, the truth is %g: %+.1f %%, want ±5 %%", v, truth, 100*(v/truth-1))
	}
	t.Logf("found %g (CI %g–%g), truth %.4g: %+.1f %% in %d steps", v, lo, hi, truth, 100*(v/truth-1), len(rec.Steps))
	return rec
}

// `throng capacity` on an open scenario varies the rate by default and
// finds the highest Poisson arrival rate to M/D/8 whose mean response
// time is under 25 ms, against the exact truth (capacitytest.OpenTruth).
func TestCapacityCommandOpenRate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about a minute (two when the generator is starved)")
	}
	truth, check, err := capacitytest.OpenTruth()
	if err != nil || math.Abs(check) > 0.01 {
		t.Fatalf("truth %g, check %g: %v", truth, check, err)
	}
	o := capacitytest.Open
	rec := truthSearch(t, truth, func() (int, *capacity.Record) {
		srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: o.Workers, Service: o.Service})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		code, _, _, rec := capacitySearch(t, srv.URL(), "model: open\nusers: 800\nopen: {rate: 100/s, arrivals: poisson, max_delay: 2s}",
			"--slo", o.SLO, "--min", "100", "--max", "1600", "--step-duration", "4s", "--no-warm-up", "--precision", "6%", "--budget", "75s", "-q")
		return code, rec
	})
	if rec.Config.Dimension != "rate" || rec.Max.Unit != "per_s" {
		t.Errorf("an open scenario searched %s in %s, want rate per_s by default", rec.Config.Dimension, rec.Max.Unit)
	}
	if got := rec.Config.SLOs; len(got) != 2 || got[1] != "dropped == 0" {
		t.Errorf("SLOs %q: want the one given and dropped == 0 (open arrivals)", got)
	}
}

// `throng capacity` on a closed scenario varies the users by default and
// finds the most users thinking 180 ms in front of 8 exponential workers
// meeting a mean under 60 ms (exact MVA) and the knee N* = (W/S)·(S+Z).
func TestCapacityCommandClosedUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about a minute (two when the generator is starved)")
	}
	truth, knee, err := capacitytest.ClosedTruth()
	if err != nil {
		t.Fatal(err)
	}
	c := capacitytest.Closed
	rec := truthSearch(t, float64(truth), func() (int, *capacity.Record) {
		srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: c.Workers, Service: c.Service, Exponential: true, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		code, _, _, rec := capacitySearch(t, srv.URL(), fmt.Sprintf("model: closed\nusers: 100\nclosed: {think: %s, think_distribution: exponential}", c.Think),
			"--slo", c.SLO, "--min", "40", "--max", "1000", "--step-duration", "4s", "--no-warm-up", "--precision", "6%", "--budget", "75s", "-q")
		return code, rec
	})
	if rec.Config.Dimension != "users" {
		t.Errorf("a closed scenario searched %s, want users by default", rec.Config.Dimension)
	}
	if rec.Knee == nil {
		t.Fatalf("no knee, want one at N* = %g users", knee)
	}
	if got := float64(rec.Knee.Load); math.Abs(got/knee-1) > 0.05 {
		t.Errorf("knee at %.2f users, want N* = %g within ±5 %%", got, knee)
	}
	t.Logf("knee %.2f users, N* = %g", float64(rec.Knee.Load), knee)
}

// The exit codes: 1 when the SLO fails already at --min (a mean under
// 15 ms of workers holding each request 20 ms: never met), 3 when the
// budget runs out before the precision (two steps: the best bracket is
// reported), 4 when the target does not answer (a closed port), and 2 for
// bad flags (nothing run, the message says which).
func TestCapacityCommandExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for a few seconds")
	}
	srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: 8, Service: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const open = "model: open\nusers: 400\nopen: {rate: 100/s, arrivals: uniform, max_delay: 2s}"
	t.Run("fails at min", func(t *testing.T) {
		code, _, stderr, rec := capacitySearch(t, srv.URL(), open, "--slo", "mean < 15ms", "--min", "50", "--max", "400",
			"--step-duration", "2s", "--no-warm-up", "-q")
		if code != ExitThresholds || rec.Status != capacity.FailsAtMin || !strings.Contains(stderr, "fails already at --min") {
			t.Fatalf("exit %d, status %s: want 1, fails at min", code, rec.Status)
		}
		if !math.IsNaN(float64(rec.Max.Value)) {
			t.Errorf("a capacity of %g when the SLO fails at --min", float64(rec.Max.Value))
		}
	})
	t.Run("out dash", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "s.yaml")
		src := "name: truth\ntarget: " + srv.URL() + "\ninterval: 500ms\n" + open + "\nphases: {ramp_up: {duration: 500ms}, steady: 2s}\nactions: [{name: get, path: /}]\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		undo, _ := capacitytest.Boost()
		defer undo()
		code, stdout, stderr := throng(t, "capacity", file, "--slo", "mean < 15ms", "--min", "50", "--max", "400", "--step-duration", "2s", "--no-warm-up", "-q", "-o", "-")
		rec, err := capacity.ReadRecord(strings.NewReader(stdout))
		if code != ExitThresholds || err != nil || rec.Status != capacity.FailsAtMin || !strings.Contains(stderr, "capacity search · truth") {
			t.Fatalf("-o -: exit %d, record %v (%v) on stdout; the text on stderr:\n%s", code, rec != nil, err, stderr)
		}
	})
	t.Run("budget", func(t *testing.T) {
		var code int
		var rec *capacity.Record
		for attempt := 1; attempt <= 2; attempt++ {
			code, _, _, rec = capacitySearch(t, srv.URL(), open, "--slo", "mean < 25ms", "--min", "20", "--max", "1600",
				"--step-duration", "2s", "--no-warm-up", "--budget", "2", "-q")
			if rec.Status != capacity.GeneratorLimited {
				break
			}
		}
		if code != ExitPartial || rec.Status != capacity.Budget || len(rec.Steps) != 2 {
			t.Fatalf("exit %d, status %s after %d steps: want 3, budget spent after 2", code, rec.Status, len(rec.Steps))
		}
		if lo := float64(rec.Max.CI95[0]); !(lo >= 20) || !strings.Contains(rec.Statement, "budget") {
			t.Errorf("the best bracket's lower end %g (want a load that met the SLO, at least 20/s); statement %q", lo, rec.Statement)
		}
	})
	t.Run("could not run", func(t *testing.T) {
		code, _, stderr, rec := capacitySearch(t, "http://"+closedPort(t), open, "--slo", "mean < 25ms", "--min", "20", "--max", "100",
			"--step-duration", "1s", "-q")
		if code != ExitFailure || rec != nil || !strings.Contains(stderr, "nothing was run") {
			t.Fatalf("exit %d (record %v): want 4 and nothing written\n%s", code, rec != nil, stderr)
		}
	})
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"no slo", "no SLO", nil},
		{"bad slo", "--slo", []string{"--slo", "p95 <"}},
		{"unknown action", "nope", []string{"--slo", "nope.p95 < 1s"}},
		{"bad vary", "--vary", []string{"--slo", "p95 < 1s", "--vary", "planets"}},
		{"rate of a closed model", "not an open model", []string{"--slo", "p95 < 1s", "--vary", "rate", "--users", "1"}},
		{"min above max", "--max", []string{"--slo", "p95 < 1s", "--min", "100", "--max", "10"}},
		{"fractional users", "whole numbers", []string{"--slo", "p95 < 1s", "--vary", "users", "--min", "1.5", "--max", "10"}},
		{"bad precision", "--precision", []string{"--slo", "p95 < 1s", "--precision", "much"}},
		{"too wide precision", "precision", []string{"--slo", "p95 < 1s", "--precision", "60%"}},
		{"bad budget", "--budget", []string{"--slo", "p95 < 1s", "--budget", "soon"}},
		{"tiny budget", "budget of 1 steps", []string{"--slo", "p95 < 1s", "--budget", "1"}},
		{"generator as SLO", "generator", []string{"--slo", "client_bound == false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "rate of a closed model" {
				code, _, stderr := throng(t, append([]string{"capacity", "web-static"}, c.args[:4]...)...)
				if code != ExitBadInput || !strings.Contains(stderr, c.want) {
					t.Fatalf("exit %d, want 2 with %q:\n%s", code, c.want, stderr)
				}
				return
			}
			code, _, stderr, _ := capacitySearch(t, srv.URL(), open, c.args...)
			if code != ExitBadInput || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, c.want, stderr)
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
