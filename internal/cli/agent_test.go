package cli

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A token file the group or others may read gets a warning saying so and
// what to do; a private one gets none. A token file that is not a regular
// file is refused at once.
func TestTokenFileWarning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("0123456789abcdef-token\n"), 0o600)
	for _, tt := range []struct {
		mode os.FileMode
		want string
	}{
		{0o600, ""},
		{0o400, ""},
		{0o640, "may be read by its group (mode 0640)"},
		{0o604, "may be read by others (mode 0604)"},
		{0o644, "may be read by its group and others (mode 0644)"},
	} {
		os.Chmod(file, tt.mode)
		var warn bytes.Buffer
		tok, err := loadToken(file, &warn)
		if err != nil || string(tok) != "0123456789abcdef-token" {
			t.Fatalf("mode %04o: %q %v", tt.mode, tok, err)
		}
		switch {
		case tt.want == "" && warn.Len() > 0:
			t.Errorf("mode %04o: warned %q", tt.mode, warn.String())
		case tt.want != "" && (!strings.Contains(warn.String(), tt.want) || !strings.Contains(warn.String(), "chmod 600 "+file)):
			t.Errorf("mode %04o: warning %q, want %q", tt.mode, warn.String(), tt.want)
		}
		if strings.Contains(warn.String(), "0123456789abcdef") {
			t.Error("the warning shows the token")
		}
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	done := make(chan error, 1)
	go func() { _, err := loadToken(fifo, &bytes.Buffer{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("a FIFO as the token file: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO as the token file hung")
	}
}

func TestAgentFlagMistakes(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("0123456789abcdef-token"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--token-file", tok, "--insecure", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, "do not give --tls-cert or --tls-key"},
		{[]string{"agent", "--token-file", tok, "--tls-cert", "c.pem"}, "give --tls-cert and --tls-key together"},
		{[]string{"agent", "--token-file", tok, "--tls-cert", "/no/c.pem", "--tls-key", "/no/k.pem"}, "certificate /no/c.pem"},
		{[]string{"run", "web-static", "--target", "http://127.0.0.1:1", "--agents", "127.0.0.1:1", "--token-file", tok, "--agent-fingerprint", "sha256:abc"}, "is not a certificate fingerprint"},
		{[]string{"run", "web-static", "--target", "http://127.0.0.1:1", "--agents", "127.0.0.1:1", "--token-file", tok, "--agents-insecure",
			"--agent-fingerprint", "sha256:" + strings.Repeat("a", 64)}, "there is no certificate to pin"},
	} {
		var out bytes.Buffer
		if code := Main(tt.args, &out, &out); code != ExitBadInput || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: exit %d\n%s", tt.args, code, out.String())
		}
	}
}

// startAgentProcess starts `throng agent` on a loopback port and returns
// its address and process.
func startAgentProcess(t *testing.T, extra ...string) (string, *exec.Cmd, *syncLog) {
	t.Helper()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("0123456789abcdef-token"), 0o600)
	log := &syncLog{}
	cmd := exec.Command(binary, append([]string{"agent", "--listen", "127.0.0.1:0", "--token-file", tok, "--dir", filepath.Join(dir, "agent")}, extra...)...)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var addr string
	if !waitFor(10*time.Second, func() bool {
		_, rest, ok := strings.Cut(log.String(), "listening on ")
		addr, _, _ = strings.Cut(rest, " ")
		return ok && strings.Contains(log.String(), "throng agent: ")
	}) {
		t.Fatalf("the agent did not start: %s", log)
	}
	return addr, cmd, log
}

// peakRSS is a process's high-water mark of resident memory, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// The real agent process, sent a 1 GB greeting (streamed, never held by
// the test): its peak resident memory stays where it was. (It reached
// 2.15 GB when the greeting was read without a bound.)
func TestAgentProcessGreetingFlood(t *testing.T) {
	for _, insecure := range []bool{false, true} {
		name := map[bool]string{false: "tls", true: "plaintext"}[insecure]
		t.Run(name, func(t *testing.T) {
			var extra []string
			if insecure {
				extra = []string{"--insecure"}
			}
			addr, cmd, log := startAgentProcess(t, extra...)
			before := peakRSS(t, cmd.Process.Pid)
			raw, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			var c net.Conn = raw
			if !insecure {
				tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
				if err := tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				c = tc
			}
			defer c.Close()
			c.SetWriteDeadline(time.Now().Add(60 * time.Second))
			chunk := bytes.Repeat([]byte("A"), 64<<10)
			var sent int64
			for sent < 1<<30 {
				n, err := c.Write(chunk)
				sent += int64(n)
				if err != nil {
					break
				}
				if sent%(64<<20) == 0 && peakRSS(t, cmd.Process.Pid)-before > 256<<20 {
					t.Fatalf("the agent's peak RSS grew by more than 256 MB after %d MB sent: the greeting is being kept", sent>>20)
				}
			}
			after := peakRSS(t, cmd.Process.Pid)
			if sent >= 1<<30 || after-before > 32<<20 {
				t.Errorf("%d MB sent; the agent's peak RSS went from %d to %d MB", sent>>20, before>>20, after>>20)
			}
			if !waitFor(5*time.Second, func() bool { return strings.Contains(log.String(), "without a line break") }) {
				t.Errorf("agent log: %s", log)
			}
			t.Logf("%d KB sent; agent peak RSS %d MB before, %d MB after", sent>>10, before>>20, after>>20)
		})
	}
}
