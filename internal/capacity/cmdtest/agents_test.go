package cmdtest

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/capacity/capacitytest"
	"github.com/throng-io/throng/internal/cli"
	"github.com/throng-io/throng/internal/targets/capacitytruth"
)

// mainEnv makes the test binary the throng command (TestMain): the agents
// of these tests are real `throng agent` processes, run from it.
const mainEnv = "THRONG_CMDTEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// syncBuffer is a buffer written by a process and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentProcess is a `throng agent` process on a loopback port.
type agentProcess struct {
	addr string
	dir  string // its --dir: its segments' results
	cmd  *exec.Cmd
	log  *syncBuffer
}

// startAgents starts n `throng agent` processes on loopback ports with
// the token in file tok, their threads in the real-time class where this
// process may (they inherit it: capacitytest.Boost), and stops them (by
// their PIDs) when the test ends.
func startAgents(t *testing.T, n int, tok string) []*agentProcess {
	t.Helper()
	undo, _ := capacitytest.Boost()
	defer undo()
	var out []*agentProcess
	for k := range n {
		a := &agentProcess{log: &syncBuffer{}, dir: filepath.Join(t.TempDir(), fmt.Sprint("agent", k))}
		a.cmd = exec.Command(os.Args[0], "agent", "--listen", "127.0.0.1:0", "--token-file", tok, "--dir", a.dir)
		a.cmd.Env = append(os.Environ(), mainEnv+"=1")
		a.cmd.Stderr = a.log
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.cmd.Process.Kill(); a.cmd.Wait() })
		out = append(out, a)
	}
	for _, a := range out {
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, rest, ok := strings.Cut(a.log.String(), "listening on ")
			if ok && strings.Contains(a.log.String(), "throng agent: ") {
				a.addr, _, _ = strings.Cut(rest, " ")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the agent did not start:\n%s", a.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return out
}

// tokenFile writes a shared token, mode 0600.
func tokenFile(t *testing.T) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef-capacity-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tok
}

// `throng capacity --agents` runs every step over two real `throng agent`
// processes, each given half of the load, and finds the highest Poisson
// arrival rate to M/D/8 whose mean is under 25 ms against the exact truth,
// as the search in one process does (TestCapacityCommandOpenRate). Were
// the steps run by one agent only, or its counts alone kept, the server
// would seem to carry twice the load: each step's throughput is checked
// against the rate offered, and each agent's share against half. The
// agents are the same processes from the first step to the last, and the
// whole search is one session of theirs (protocol 3), each step one run
// in it.
func TestCapacityCommandOverAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about a minute")
	}
	truth, check, err := capacitytest.OpenTruth()
	if err != nil || math.Abs(check) > 0.01 {
		t.Fatalf("truth %g, check %g: %v", truth, check, err)
	}
	tok := tokenFile(t)
	agents := startAgents(t, 2, tok)
	addrs := []string{agents[0].addr, agents[1].addr}
	o := capacitytest.Open
	sessions := func(a *agentProcess) int { return strings.Count(a.log.String(), " connected\n") }
	runs := func(a *agentProcess) int { return strings.Count(a.log.String(), "run done") }
	before := make([]int, len(agents))     // the sessions before the last attempt
	beforeRuns := make([]int, len(agents)) // and the runs
	rec := truthSearch(t, truth, func() (int, *capacity.Record) {
		for i, a := range agents {
			before[i], beforeRuns[i] = sessions(a), runs(a)
		}
		srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: o.Workers, Service: o.Service})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		code, _, _, rec := capacitySearch(t, srv.URL(), "model: open\nusers: 800\nopen: {rate: 100/s, arrivals: poisson, max_delay: 2s}",
			"--slo", o.SLO, "--min", "100", "--max", "1600", "--step-duration", "4s", "--no-warm-up", "--precision", "6%", "--budget", "75s", "-q",
			"--agents", strings.Join(addrs, ","), "--token-file", tok)
		return code, rec
	})
	if !slices.Equal(rec.Agents, addrs) {
		t.Errorf("the record's agents %q, want %q", rec.Agents, addrs)
	}
	for i, s := range rec.Steps {
		if s.Run == nil {
			t.Fatalf("step %d kept no run", i+1)
		}
		ag := s.Run.Agents
		if len(ag) != 2 || ag[0].Name != addrs[0] || ag[1].Name != addrs[1] {
			t.Fatalf("step %d ran over %+v, want the two agents %q", i+1, ag, addrs)
		}
		for _, a := range ag {
			if a.Users != 400 {
				t.Errorf("step %d: agent %s ran %d users, want half of 800", i+1, a.Name, a.Users)
			}
		}
		// Every arrival offered was run by one agent or the other: the
		// merged throughput is the rate offered (minus what failed or
		// was dropped, which a step meeting the SLO has none of).
		if s.Verdict == capacity.VerdictMet {
			if got, want := float64(s.Throughput), s.Request.Load; math.Abs(got/want-1) > 0.1 {
				t.Errorf("step %d at %g/s: throughput %.1f/s, want the rate offered within ±10 %% (the agents' counts merged)", i+1, want, got)
			}
		}
	}
	// One session per search on each agent, one run in it per step, the
	// same process throughout.
	for i, a := range agents {
		if n, r := sessions(a)-before[i], runs(a)-beforeRuns[i]; n != 1 || r != len(rec.Steps) {
			t.Errorf("agent %s had %d sessions and %d runs for a search of %d steps, want 1 session of %d runs:\n%s", a.addr, n, r, len(rec.Steps), len(rec.Steps), a.log)
		}
	}
}

// --agents with what a distributed search cannot do is bad input (exit
// 2), nothing run, the message saying why.
func TestCapacityCommandAgentsBadInput(t *testing.T) {
	srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: 8, Service: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tok := tokenFile(t)
	addr := closedPort(t)
	const open = "model: open\nusers: 400\nopen: {rate: 100/s, arrivals: uniform, max_delay: 2s}"
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"weights without agents", "give --agents too", []string{"--weights", "1,3"}},
		{"weights for other agents", "--weights has 3 values for 1 agents", []string{"--agents", addr, "--token-file", tok, "--weights", "1,2,3"}},
		{"bad address", "--agents", []string{"--agents", "nowhere", "--token-file", tok}},
		{"no token", "token", []string{"--agents", addr, "--token-file", filepath.Join(t.TempDir(), "none")}},
		{"pins in plaintext", "no certificate to pin", []string{"--agents", addr, "--token-file", tok, "--agents-insecure",
			"--agent-fingerprint", "sha256:" + strings.Repeat("ab", 32)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr, _ := capacitySearch(t, srv.URL(), open, append([]string{"--slo", "mean < 25ms", "-q"}, c.args...)...)
			if code != ExitBadInput || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, c.want, stderr)
			}
		})
	}
	t.Run("embedded target", func(t *testing.T) {
		code, _, stderr := throng(t, "capacity", "web-static", "--slo", "p95 < 1s", "--agents", addr, "--token-file", tok)
		if code != ExitBadInput || !strings.Contains(stderr, "needs a real target that every agent reaches") {
			t.Fatalf("exit %d, want 2 saying the target must be real:\n%s", code, stderr)
		}
	})
}

// An agent that does not answer at the first step: nothing was run, exit
// 4, the message naming it.
func TestCapacityCommandAgentUnreachable(t *testing.T) {
	srv, err := capacitytruth.Start("127.0.0.1:0", capacitytruth.Config{Workers: 8, Service: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := closedPort(t)
	code, _, stderr, rec := capacitySearch(t, srv.URL(), "model: open\nusers: 400\nopen: {rate: 100/s, arrivals: uniform, max_delay: 2s}",
		"--slo", "mean < 25ms", "--min", "20", "--max", "100", "--step-duration", "1s", "-q", "--agents", addr, "--token-file", tokenFile(t))
	if code != ExitFailure || rec != nil || !strings.Contains(stderr, "agent "+addr) || !strings.Contains(stderr, "nothing was run") {
		t.Fatalf("exit %d (record %v): want 4, nothing written, the agent named\n%s", code, rec != nil, stderr)
	}
}
