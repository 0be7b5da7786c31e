package cli

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// testNet is a private network of "hosts" on this machine: one network
// namespace each, joined by a bridge that lives in a namespace of its own.
// The root namespace never addresses the subnet: while the namespaces
// exist, a route marks it unreachable there, so a mistake cannot send
// traffic off the machine.
type testNet struct {
	t      *testing.T
	ip     string
	prefix string // like "thr1234" (names of namespaces and links)
	subnet string // like "10.201.57"
	hosts  map[string]string
	procs  []*exec.Cmd
}

// run runs one ip command; any failure fails the test.
func (n *testNet) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newTestNet creates the namespaces and the bridge, and removes them (and
// the route, and every process started in them) when the test ends.
func newTestNet(t *testing.T, hosts ...string) *testNet {
	t.Helper()
	ci := os.Getenv("CI") != ""
	if os.Getuid() != 0 {
		if ci {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	ip := testenv.RequireBinary(t, "ip", "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip")
	n := &testNet{t: t, ip: ip, prefix: fmt.Sprintf("thr%d", os.Getpid()%100000),
		subnet: fmt.Sprintf("10.201.%d", 10+rand.IntN(240)), hosts: map[string]string{}}
	hub := n.prefix + "hub"
	n.run("route", "add", "unreachable", n.subnet+".0/24")
	t.Cleanup(func() {
		for _, p := range n.procs {
			if p.Process != nil {
				p.Process.Signal(syscall.SIGKILL)
				p.Wait()
			}
		}
		exec.Command(ip, "netns", "del", hub).Run()
		for name := range n.hosts {
			exec.Command(ip, "netns", "del", n.prefix+name).Run()
		}
		exec.Command(ip, "route", "del", "unreachable", n.subnet+".0/24").Run()
	})
	n.run("netns", "add", hub)
	n.run("-n", hub, "link", "add", "br0", "type", "bridge")
	n.run("-n", hub, "link", "set", "br0", "up")
	for i, name := range hosts {
		ns := n.prefix + name
		addr := fmt.Sprintf("%s.%d", n.subnet, 10+i)
		hostLink, hubLink := fmt.Sprintf("%sh%d", n.prefix, i), fmt.Sprintf("%sb%d", n.prefix, i)
		n.run("netns", "add", ns)
		n.hosts[name] = addr
		n.run("link", "add", hostLink, "type", "veth", "peer", "name", hubLink)
		n.run("link", "set", hostLink, "netns", ns)
		n.run("link", "set", hubLink, "netns", hub)
		n.run("-n", hub, "link", "set", hubLink, "master", "br0")
		n.run("-n", hub, "link", "set", hubLink, "up")
		n.run("-n", ns, "addr", "add", addr+"/24", "dev", hostLink)
		n.run("-n", ns, "link", "set", hostLink, "up")
		n.run("-n", ns, "link", "set", "lo", "up")
	}
	return n
}

// start runs a command inside a host's namespace; it is killed at the end
// of the test if it is still running.
func (n *testNet) start(host string, stdout, stderr io.Writer, bin string, args ...string) *exec.Cmd {
	n.t.Helper()
	cmd := exec.Command(n.ip, append([]string{"netns", "exec", n.prefix + host, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.procs = append(n.procs, cmd)
	return cmd
}

// TestNetnsNginxHelper is not a test: run inside a namespace by
// startNginxIn, it starts nginx on that namespace's address (so the
// readiness probe runs inside the namespace too) and serves until its
// stdin closes.
func TestNetnsNginxHelper(t *testing.T) {
	host := os.Getenv("THRONG_NETNS_NGINX")
	if host == "" {
		t.Skip("helper process only")
	}
	ng, err := testenv.StartNginx(t.Context(), testenv.NginxOptions{Host: host, KeepaliveRequests: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("NGINX %s\n", ng.URL)
	io.Copy(io.Discard, os.Stdin)
	ng.Stop()
}

// startNginxIn starts nginx in a host of the network and returns its URL.
func (n *testNet) startNginxIn(host string) string {
	n.t.Helper()
	cmd := exec.Command(n.ip, "netns", "exec", n.prefix+host, os.Args[0], "-test.run", "^TestNetnsNginxHelper$")
	cmd.Env = append(os.Environ(), "THRONG_NETNS_NGINX="+n.hosts[host])
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "NGINX "); ok {
			go io.Copy(io.Discard, out)
			return url
		}
	}
	n.t.Fatal("nginx did not start in its namespace")
	return ""
}

// waitFor polls until cond holds or the time is up.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A distributed run over real separate hosts (network namespaces): nginx on
// one, two agents on two others, the controller on a fourth. Then the faults:
// an agent killed mid-run, a controller with the wrong token, a controller
// killed mid-run.
func TestDistributedAcrossNamespaces(t *testing.T) {
	n := newTestNet(t, "srv", "a1", "a2", "ctl")
	url := n.startNginxIn("srv")
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("ns-test-token-0123456789abcdef\n"), 0o600)
	agentLogs := []*syncLog{{}, {}}
	for i, h := range []string{"a1", "a2"} {
		n.start(h, io.Discard, agentLogs[i], binary, "agent", "--listen", n.hosts[h]+":7070", "--token-file", token, "--dir", filepath.Join(dir, h))
	}
	agents := n.hosts["a1"] + ":7070," + n.hosts["a2"] + ":7070"
	for i, l := range agentLogs {
		if !waitFor(10*time.Second, func() bool { return strings.Contains(l.String(), "listening") }) {
			t.Fatalf("agent %d did not start: %s", i+1, l)
		}
	}
	controller := func(out string, extra ...string) (*exec.Cmd, *syncLog) {
		log := &syncLog{}
		args := append([]string{"run", "web-static", "--target", url, "--agents", agents, "--token-file", token, "-q", "-o", out}, extra...)
		return n.start("ctl", log, log, binary, args...), log
	}

	t.Run("merged over two hosts", func(t *testing.T) {
		out := filepath.Join(dir, "run.json")
		cmd, log := controller(out, "--users", "6", "--iterations", "2000", "--weights", "1,2")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("controller: %v\n%s", err, log)
		}
		run, err := result.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// Over TLS (the default), each agent's generated certificate
		// named, trusted by the token bound to the session.
		if c := strings.Count(log.String(), "not pinned: the token authenticates the agent"); c != 2 {
			t.Errorf("%d agents reached over TLS, want 2:\n%s", c, log)
		}
		tot := result.Find(run.Repetitions[0].Summaries, result.All).Total
		if tot.Count != 12_000 || tot.Errors != 0 || run.Partial {
			t.Fatalf("count %d errors %d partial %v %s", tot.Count, tot.Errors, run.Partial, run.Reason)
		}
		if len(run.Agents) != 2 || run.Agents[0].Users != 2 || run.Agents[1].Users != 4 {
			t.Errorf("agents %+v", run.Agents)
		}
		for _, a := range run.Agents {
			if a.StartSkewMs < -50 || a.StartSkewMs > 50 {
				t.Errorf("agent %s started %.1f ms off the agreed instant", a.Name, a.StartSkewMs)
			}
		}
	})

	// The agents above serve TLS with certificates they generated; the run
	// above trusted them by the token alone. Pinned, the same run works;
	// a wrong pin is refused before anything runs.
	t.Run("pinned fingerprints", func(t *testing.T) {
		var pins []string
		for i, l := range agentLogs {
			m := fingerprintRE.FindStringSubmatch(l.String())
			if m == nil {
				t.Fatalf("agent %d printed no fingerprint:\n%s", i+1, l)
			}
			pins = append(pins, m[1])
		}
		out := filepath.Join(dir, "pinned.json")
		cmd, log := controller(out, "--users", "4", "--iterations", "500", "--agent-fingerprint", pins[0], "--agent-fingerprint", pins[1])
		if err := cmd.Wait(); err != nil {
			t.Fatalf("controller: %v\n%s", err, log)
		}
		if run, err := result.ReadFile(out); err != nil || result.Find(run.Repetitions[0].Summaries, result.All).Total.Count != 2000 {
			t.Errorf("pinned run: %v", err)
		}
		if strings.Contains(log.String(), "not pinned") {
			t.Errorf("the controller says an agent is not pinned:\n%s", log)
		}
		cmd, log = controller(filepath.Join(dir, "badpin.json"), "--agent-fingerprint", pins[0])
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailure || !strings.Contains(log.String(), pins[1]+", which is not pinned") {
			t.Errorf("one agent not pinned: exit %v\n%s", err, log)
		}
	})

	// Plaintext, when both sides say so; one side alone is refused.
	t.Run("plaintext on request", func(t *testing.T) {
		plainLog := &syncLog{}
		n.start("a1", io.Discard, plainLog, binary, "agent", "--insecure", "--listen", n.hosts["a1"]+":7072", "--token-file", token, "--dir", filepath.Join(dir, "plain"))
		if !waitFor(10*time.Second, func() bool { return strings.Contains(plainLog.String(), "listening") }) {
			t.Fatalf("the plaintext agent did not start: %s", plainLog)
		}
		plain := n.hosts["a1"] + ":7072"
		log := &syncLog{}
		out := filepath.Join(dir, "plain.json")
		cmd := n.start("ctl", log, log, binary, "run", "web-static", "--target", url, "--agents", plain, "--agents-insecure",
			"--token-file", token, "--users", "2", "--iterations", "500", "-q", "-o", out)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("plaintext controller: %v\n%s", err, log)
		}
		log = &syncLog{}
		cmd = n.start("ctl", log, log, binary, "run", "web-static", "--target", url, "--agents", plain,
			"--token-file", token, "-q", "-o", filepath.Join(dir, "mixed.json"))
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailure || !strings.Contains(log.String(), "serves without TLS") {
			t.Errorf("TLS controller, plaintext agent: exit %v\n%s", err, log)
		}
	})

	t.Run("wrong token refused", func(t *testing.T) {
		bad := filepath.Join(dir, "bad")
		os.WriteFile(bad, []byte("a-different-token-0123456789\n"), 0o600)
		log := &syncLog{}
		cmd := n.start("ctl", log, log, binary, "run", "web-static", "--target", url, "--agents", agents, "--token-file", bad, "-q", "-o", filepath.Join(dir, "bad.json"))
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailure || !strings.Contains(log.String(), "did not prove the shared token") {
			t.Errorf("exit %v\n%s", err, log)
		}
		if !waitFor(2*time.Second, func() bool { return strings.Contains(agentLogs[0].String(), "refused") }) {
			t.Errorf("agent log does not record the refusal:\n%s", agentLogs[0])
		}
	})

	t.Run("agent killed mid-run", func(t *testing.T) {
		// A third agent, to be killed.
		victimLog := &syncLog{}
		victim := n.start("a2", io.Discard, victimLog, binary, "agent", "--listen", n.hosts["a2"]+":7071", "--token-file", token, "--dir", filepath.Join(dir, "v"))
		waitFor(10*time.Second, func() bool { return strings.Contains(victimLog.String(), "listening") })
		out := filepath.Join(dir, "kill.json")
		log := &syncLog{}
		cmd := n.start("ctl", log, log, binary, "run", "web-static", "--target", url, "--agents", n.hosts["a1"]+":7070,"+n.hosts["a2"]+":7071",
			"--token-file", token, "--users", "4", "--iterations", "0", "--duration", "6s", "-q", "-o", out)
		time.Sleep(2500 * time.Millisecond)
		victim.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		run, err := result.ReadFile(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		if !run.Partial || !strings.Contains(run.Reason, n.hosts["a2"]+":7071") {
			t.Errorf("partial %v reason %q", run.Partial, run.Reason)
		}
		if tot := result.Find(run.Repetitions[0].Summaries, result.All).Total; tot.Count == 0 || tot.Errors != 0 {
			t.Errorf("count %d errors %d: the surviving agent's load is missing", tot.Count, tot.Errors)
		}
	})

	t.Run("controller lost", func(t *testing.T) {
		out := filepath.Join(dir, "lost.json")
		before := agentLogs[0].String()
		cmd, _ := controller(out, "--users", "2", "--iterations", "0", "--duration", "60s")
		if !waitFor(10*time.Second, func() bool { return strings.Contains(strings.TrimPrefix(agentLogs[0].String(), before), "starts at") }) {
			t.Fatal("the run did not start")
		}
		time.Sleep(1500 * time.Millisecond)
		before = agentLogs[0].String()
		cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		ok := waitFor(12*time.Second, func() bool {
			return strings.Contains(strings.TrimPrefix(agentLogs[0].String(), before), "controller lost")
		})
		if !ok {
			t.Fatalf("an agent kept running without its controller:\n%s", agentLogs[0])
		}
		if took := time.Since(killed); took > 8*time.Second {
			t.Errorf("the agent stopped %v after losing its controller", took)
		}
	})
}

// fingerprintRE finds the fingerprint an agent prints at start.
var fingerprintRE = regexp.MustCompile(`--agent-fingerprint (sha256:[0-9a-f]{64})`)

// syncLog collects a process's output for assertions.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
