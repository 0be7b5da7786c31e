package testenv

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run the real prometheus-node-exporter; they skip when it is
// not installed (and fail instead when CI is set, see RequireBinary).

func TestNodeExporterServesMetrics(t *testing.T) {
	t.Parallel()
	s := NodeExporter(t)
	if s.Name != "node_exporter" || !strings.HasPrefix(s.Addr, "127.0.0.1:") || s.URL != "http://"+s.Addr {
		t.Fatalf("Name %q, Addr %q, URL %q", s.Name, s.Addr, s.URL)
	}
	if !s.Alive() || s.PID <= 0 || s.ErrorLog != filepath.Join(s.Dir, "node_exporter.log") {
		t.Fatalf("Alive %v, PID %d, ErrorLog %q", s.Alive(), s.PID, s.ErrorLog)
	}
	start := time.Now()
	resp, body := get(t, s.URL+"/metrics")
	t.Logf("GET /metrics: %s, %d bytes in %v", resp.Status, len(body), time.Since(start))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	page := string(body)
	for _, want := range []string{
		"\nnode_cpu_seconds_total{cpu=\"0\",mode=\"user\"} ",
		"\nnode_context_switches_total ",
		"\nnode_memory_MemTotal_bytes ",
		// Loopback is exported, unlike with the packaged default.
		"\nnode_network_receive_bytes_total{device=\"lo\"} ",
		"\nthrong_testenv_ready{token=\"",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `collector="systemd"`) {
		t.Error("the systemd collector is enabled")
	}
}

// TestNodeExporterPortTaken gives the exporter a port held by a foreign
// server that serves a plausible node_exporter page: the start must not take
// it for its own exporter (the page lacks this start's token), must notice
// "address already in use" and move to another port.
func TestNodeExporterPortTaken(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "prometheus-node-exporter", NodeExporterPaths...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	foreign := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# not ours\nnode_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 1\nthrong_testenv_ready{token=\"0\"} 1\n")
	})}
	go foreign.Serve(l)
	defer foreign.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	ports := func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return FreePort()
	}
	start := time.Now()
	s, err := startNodeExporter(t.Context(), ports)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	t.Logf("start with one taken port: %v, %d ports tried", time.Since(start), calls)
	if calls != 2 || s.Addr == l.Addr().String() {
		t.Fatalf("calls %d, Addr %s (taken: %d)", calls, s.Addr, taken)
	}
}

func TestNodeExporterStopCleansUp(t *testing.T) {
	t.Parallel()
	s := NodeExporter(t) // its Cleanup calls Stop again: must be a no-op
	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(start))
	if _, err := os.Stat("/proc/" + strconv.Itoa(s.PID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid %d still in /proc after Stop (err %v)", s.PID, err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dir %s still exists after Stop (err %v)", s.Dir, err)
	}
	if s.Alive() {
		t.Error("Alive after Stop")
	}
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", s.Addr)
	}
}

// Not parallel: it checks, in a private TMPDIR, that a start that cannot
// happen leaves nothing behind.
func TestNodeExporterStartExpiredContext(t *testing.T) {
	RequireBinary(t, "prometheus-node-exporter", NodeExporterPaths...)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if s, err := StartNodeExporter(ctx); err == nil || !errors.Is(err, context.Canceled) {
		if s != nil {
			s.Stop()
		}
		t.Fatalf("start with a cancelled context: err %v", err)
	}
	// A deadline during the readiness wait: the process is stopped and
	// its directory removed.
	ctx, cancel = context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if s, err := StartNodeExporter(ctx); err == nil {
		s.Stop() // the machine was fast enough: nothing to check
		t.Skip("node_exporter was ready within 1 ms")
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
}
