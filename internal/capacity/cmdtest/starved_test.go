package cmdtest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/capacity/capacitytest"
	"github.com/throng-io/throng/internal/targets/capacitytruth"
	"github.com/throng-io/throng/internal/testenv"
)

// The starved generator: a search whose generator gets less CPU than it
// needs, long before the server saturates, must end "generator-limited"
// or "budget spent" (exit 3) naming the generator as its first limit, with
// no capacity, never a capacity of the server.
//
// The premise is made to hold, not hoped for. The server (the
// capacity-truth target: 64 workers holding each request 10 ms, 6,400
// requests/s whatever the machine) runs in this test's process,
// unconfined; the generator is this test binary run again as `throng
// capacity` (TestMain, mainEnv), in a CPU cgroup of its own limited to a few % of
// one CPU (cgroup v2 cpu.max or v1 cpu.cfs_quota_us; without a writable
// cgroup, pinned to one CPU shared with busy loops, each started here and
// killed by its PID: about the same share). The generator needs about 4 %
// of a core idle and more as the rate grows (measured: 0.045 cores at
// 200/s, 0.1 at 3,000/s): at 3 % it is short at every load, at 6 % it
// carries the first loads and runs short as the search brackets upward.
// Its guard sees the quota's throttling on a machine otherwise idle
// (sampler.CPUThrottled), and other processes' competition on a busy one.
//
// The control is the same search, its generator not confined, from the
// highest load the starved searches tried: it must meet the SLO there —
// proof that the server was not what stopped them. When the control's own
// generator is bound (a machine too busy for it), the premise is not shown
// and the test is skipped, saying so with the load average.
func TestCapacityCommandGeneratorStarved(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about 50 s")
	}
	// The server's threads (this process's) in the real-time class where
	// they may be, as in the other searches here: on a machine kept busy by
	// others its holds would otherwise run late, and the control would fail
	// for the machine's sake (a control once measured a mean of 24 ms for
	// holds of 10 ms at 100/s, load average 16). The confined generator is
	// put back in the normal class before it joins its cgroup.
	undo, _ := capacitytest.Boost()
	defer undo()
	srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: 64, Service: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const truth = 6400.0 // W/S: no rate above it meets any latency SLO for long
	args := func(min float64, budget string) []string {
		return []string{"--slo", "mean < 20ms", "--min", strconv.FormatFloat(min, 'f', 0, 64), "--max", "12800",
			"--step-duration", "2s", "--no-warm-up", "--budget", budget}
	}
	type starvedSearch struct {
		name  string
		share float64
		code  int
		rec   *capacity.Record
	}
	// At 3 % of a CPU the generator is short already at --min; at 6 % it
	// carries the first loads, the search brackets upward, and it runs
	// short on the way: the search must not take the loads it could not
	// deliver for the server's.
	searches := []*starvedSearch{{name: "at min", share: 0.03}, {name: "midway", share: 0.06}}
	var tried float64
	for _, s := range searches {
		confined, how, release := starveCommand(t, s.share)
		s.code, s.rec = searchInProcess(t, confined, srv.URL(), args(100, "10,40s")...)
		release()
		bound := 0
		for _, st := range s.rec.Steps {
			tried = math.Max(tried, st.Request.Load)
			if hasInvalid(&st, capacity.GeneratorBound) {
				bound++
			}
		}
		t.Logf("%s (%s): exit %d, the generator bound in %d of %d steps: %s", s.name, how, s.code, bound, len(s.rec.Steps), s.rec.Statement)
	}

	control, _, _ := starveCommand(t, 0)
	ccode, ctl := searchInProcess(t, control, srv.URL(), args(tried, "2")...)
	carried := math.NaN()
	for _, s := range ctl.Steps {
		if meets(&s) && s.Request.Load >= tried && !(s.Request.Load <= carried) {
			carried = s.Request.Load
		}
	}
	if math.IsNaN(carried) {
		for _, s := range ctl.Steps {
			if hasInvalid(&s, capacity.GeneratorBound) {
				la, _ := os.ReadFile("/proc/loadavg")
				t.Skipf("the premise is not shown: the control's own generator was bound (load average %s): %s", strings.TrimSpace(string(la)), ctl.Statement)
			}
		}
		t.Fatalf("the control did not carry %g/s, the highest the starved searches tried: the server, not the generator, "+
			"may have stopped them (truth %g/s); control (exit %d): %s", tried, truth, ccode, ctl.Statement)
	}
	t.Logf("the control, its generator not confined, carried %g/s within the SLO (the starved searches tried up to %g/s)", carried, tried)

	for _, s := range searches {
		rec := s.rec
		switch {
		case s.code != ExitPartial || (rec.Status != capacity.GeneratorLimited && rec.Status != capacity.Budget):
			// Generator-limited, or the budget spent with only a lower
			// bound ("above, the load generator was the bottleneck").
			t.Errorf("%s: exit %d, status %s: want 3, generator-limited or budget spent (%s)", s.name, s.code, rec.Status, rec.Statement)
		case !math.IsNaN(float64(rec.Max.Value)):
			t.Errorf("%s: a capacity of %g stated: %s", s.name, float64(rec.Max.Value), rec.Statement)
		case !strings.Contains(rec.Statement, "generator"):
			t.Errorf("%s: the statement does not name the generator: %s", s.name, rec.Statement)
		case rec.FirstLimit == nil || rec.FirstLimit.Resource != "generator":
			t.Errorf("%s: first limit %+v, want the generator", s.name, rec.FirstLimit)
		case float64(rec.Max.CI95[0]) >= carried:
			t.Errorf("%s: the lower bound %g is not under the load %g the control carried", s.name, float64(rec.Max.CI95[0]), carried)
		}
	}
	if s := searches[0]; s.rec.Status != capacity.GeneratorLimited {
		t.Errorf("%s: status %s, want generator-limited (its generator is short at every load)", s.name, s.rec.Status)
	}
}

// meets reports whether step s met every SLO (clearly, or within its
// noise).
func meets(s *capacity.RecordStep) bool {
	if s.Verdict != "met" && s.Verdict != "near" {
		return false
	}
	for _, f := range s.SLOs {
		if !f.Pass {
			return false
		}
	}
	return true
}

// hasInvalid reports whether step s was invalid for the reason kind.
func hasInvalid(s *capacity.RecordStep, kind capacity.InvalidKind) bool {
	for _, iv := range s.Invalid {
		if iv.Kind == kind {
			return true
		}
	}
	return false
}

// starveEnv set to "taskset" makes starveCommand confine the generator
// as on a machine without a writable CPU cgroup (taskset onto one CPU
// shared with busy loops), so that path is run where a cgroup exists too:
// THRONG_STARVE=taskset go test ./internal/capacity/cmdtest -run Starved.
const starveEnv = "THRONG_STARVE"

// starveCommand returns how to start this test binary as the throng
// command with its CPU limited to share of one CPU (0: not limited; then
// in the real-time class where it may be, like the other searches here),
// and how it was confined, and release, which ends the confinement's busy
// loops (if any) once the search is done. It skips the test when it cannot
// confine.
func starveCommand(t *testing.T, share float64) (start func(args ...string) *exec.Cmd, how string, release func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(name, args...)
		c.Env = append(os.Environ(), mainEnv+"=1")
		return c
	}
	if share == 0 {
		return func(args ...string) *exec.Cmd {
			if _, err := exec.LookPath("chrt"); err == nil && os.Geteuid() == 0 {
				return cmd("chrt", append([]string{"--rr", "1", self}, args...)...)
			}
			return cmd(self, args...)
		}, "not confined", func() {}
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		t.Skip("no chrt (util-linux): cannot put the confined generator back in the normal class")
	}
	if os.Getenv(starveEnv) == "taskset" {
		t.Logf("%s=taskset: taskset and busy loops, not a cgroup", starveEnv)
	} else if procs, how, err := cpuCgroup(t, share); err == nil {
		return func(args ...string) *exec.Cmd {
			// chrt -o: a process forked from a real-time thread is
			// real-time too, and may not join a cgroup without a real-time
			// budget.
			return cmd("chrt", append([]string{"-o", "0", "sh", "-c", `echo $$ > "$0" && exec "$@"`, procs, self}, args...)...)
		}, how, func() {}
	} else {
		t.Logf("no CPU cgroup (%v): taskset and busy loops instead", err)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("neither a writable CPU cgroup nor taskset: cannot starve the generator")
	}
	burners := int(math.Round(1/share)) - 1
	var pids []*exec.Cmd
	release = func() {
		for _, b := range pids {
			unix.Kill(b.Process.Pid, unix.SIGKILL)
			b.Wait()
		}
		pids = nil
	}
	t.Cleanup(release)
	for range burners {
		b := exec.Command("chrt", "-o", "0", "taskset", "-c", "0", "sh", "-c", "while :; do :; done")
		// Killed with the test binary too: a test killed by its timeout
		// runs no cleanup, and a busy loop left behind loads the machine.
		b.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, b)
	}
	return func(args ...string) *exec.Cmd {
		return cmd("chrt", append([]string{"-o", "0", "taskset", "-c", "0", self}, args...)...)
	}, fmt.Sprintf("one CPU shared with %d busy loops", burners), release
}

// cpuCgroup makes a CPU cgroup limited to share of one CPU, removed when
// the test ends, and returns its cgroup.procs file.
func cpuCgroup(t *testing.T, share float64) (procs, how string, err error) {
	t.Helper()
	cg, err := testenv.NewCPUCgroup(fmt.Sprintf("cmdtest-%g", share), share)
	if err != nil {
		return "", "", err
	}
	t.Cleanup(func() {
		// The processes in it have exited (each search waits for its
		// command).
		if err := cg.Close(); err != nil {
			t.Log(err)
		}
	})
	return cg.Procs, cg.How, nil
}

// searchInProcess runs `throng capacity` as the process start makes, on
// a scenario of the capacity-truth target at url, and returns its exit
// code and the record it wrote.
func searchInProcess(t *testing.T, start func(args ...string) *exec.Cmd, url string, args ...string) (int, *capacity.Record) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "truth.yaml")
	src := fmt.Sprintf("name: truth\ntarget: %s\ninterval: 500ms\nmodel: open\nusers: 6400\nopen: {rate: 100/s, arrivals: poisson, max_delay: 2s}\n"+
		"phases: {ramp_up: {duration: 500ms}, steady: 2s}\nweb: {timeout: 10s}\nactions: [{name: get, path: /}]\n", url)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cap.json")
	cmd := start(append([]string{"capacity", file, "--out", out}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	t.Logf("throng capacity %s: exit %d after %s\n%s", strings.Join(args, " "), code, time.Since(t0).Round(time.Second), stderr.String())
	rec, err := capacity.ReadRecordFile(out)
	if err != nil {
		t.Fatalf("the record --out wrote cannot be read back (exit %d): %v", code, err)
	}
	return code, rec
}
