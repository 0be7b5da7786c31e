package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// NodeExporterPaths are the places besides PATH where StartNodeExporter and
// NodeExporter look for Debian's prometheus-node-exporter binary.
var NodeExporterPaths = []string{"/usr/bin/prometheus-node-exporter"}

const (
	// NodeExporterReadyTimeout bounds how long StartNodeExporter waits for
	// one node_exporter process to become ready.
	NodeExporterReadyTimeout = 10 * time.Second
	nodeExporterPollInterval = 5 * time.Millisecond
	// A metrics page is about 60 KB; a probe reads at most this much.
	nodeExporterProbeLimit = 8 << 20
)

// StartNodeExporter starts a private Prometheus node_exporter (Debian's
// prometheus-node-exporter) on 127.0.0.1 and blocks until it is ready, or
// until it failed, NodeExporterReadyTimeout passed or ctx was done. ctx
// governs the start only, not the life of the server: stop it with
// Server.Stop (SIGTERM, then SIGKILL to its process group after
// StopTimeout).
//
// The server gets a fresh directory under os.TempDir() (Server.Dir) holding
// node_exporter.log (its stdout and stderr, Server.ErrorLog) and textfile/,
// the directory of its textfile collector. It runs with the default
// collectors except systemd (which fails without a systemd bus and logs an
// error at every scrape), with --web.listen-address=127.0.0.1:PORT on a port
// free at start time, and with --collector.netdev.device-exclude='^$', so
// that, unlike the packaged default, the loopback interface is exported
// (node_network_*{device="lo"}) and loopback benchmarks can be measured.
// Server.URL is "http://127.0.0.1:PORT"; the page is at URL + "/metrics".
//
// It is ready when GET /metrics returns a page holding node_cpu_seconds_total
// and a series with a random per-start token, written to textfile/ before
// the start (so only this very exporter can answer), while the process
// started here is still running. If the port turns out to be taken,
// StartNodeExporter retries with another port, up to 5 ports in all. On
// failure everything started is stopped and removed, and the error includes
// the end of the log. The binary is found with
// FindBinary("prometheus-node-exporter", NodeExporterPaths...).
func StartNodeExporter(ctx context.Context) (*Server, error) {
	return startNodeExporter(ctx, FreePort)
}

// startNodeExporter is StartNodeExporter with the port source as a
// parameter (for tests).
func startNodeExporter(ctx context.Context, nextPort func() (int, error)) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testenv: node_exporter: not started: %w", err)
	}
	bin, err := FindBinary("prometheus-node-exporter", NodeExporterPaths...)
	if err != nil {
		return nil, err
	}
	return onFreePort("node_exporter", nextPort, func(port int) (*Server, error) {
		return startNodeExporterOnce(ctx, bin, port)
	})
}

// startNodeExporterOnce makes one attempt on one port. It returns an error
// wrapping errAddrInUse when the port was taken.
func startNodeExporterOnce(ctx context.Context, bin string, port int) (_ *Server, err error) {
	dir, err := newPrivateDir("node_exporter")
	if err != nil {
		return nil, err
	}
	var proc *process
	defer func() {
		if err != nil {
			if proc != nil {
				proc.abort()
			}
			os.RemoveAll(dir)
		}
	}()
	textfile := filepath.Join(dir, "textfile")
	if err := os.Mkdir(textfile, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: node_exporter: %w", err)
	}
	tokenBytes := make([]byte, 16)
	rand.Read(tokenBytes)
	marker := `throng_testenv_ready{token="` + hex.EncodeToString(tokenBytes) + `"} 1`
	if err := os.WriteFile(filepath.Join(textfile, "throng_ready.prom"), []byte(marker+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: node_exporter: %w", err)
	}

	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "node_exporter.log")
	proc, err = startProcess(dir, logPath, bin,
		"--web.listen-address="+addr,
		"--collector.textfile.directory="+textfile,
		"--collector.netdev.device-exclude=^$",
		"--no-collector.systemd",
	)
	if err != nil {
		return nil, fmt.Errorf("testenv: node_exporter: starting %s: %w", bin, err)
	}
	if err := waitNodeExporterReady(ctx, proc, "http://"+addr+"/metrics", marker, logPath); err != nil {
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("testenv: node_exporter: %s: %w", addr, err)
		}
		return nil, fmt.Errorf("testenv: node_exporter on %s (pid %d) did not become ready: %w%s",
			addr, proc.pid, err, logSuffix(logPath))
	}
	return &Server{
		Name:       "node_exporter",
		Addr:       addr,
		URL:        "http://" + addr,
		Dir:        dir,
		PID:        proc.pid,
		ErrorLog:   logPath,
		proc:       proc,
		stopSignal: syscall.SIGTERM,
	}, nil
}

// waitNodeExporterReady polls url until its page holds node_cpu_seconds_total
// and marker while proc is still running. It fails early when the exporter
// exited or logged that the port is taken.
func waitNodeExporterReady(ctx context.Context, proc *process, url, marker, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, NodeExporterReadyTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true} // no proxy, no pooled connections
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	tick := time.NewTicker(nodeExporterPollInterval)
	defer tick.Stop()
	timeout := nginxProbeTimeoutMin
	var last error
	for {
		status, body, err := probeBody(ctx, client, url, timeout)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			last = fmt.Errorf("no answer within %v", timeout)
			timeout = min(2*timeout, nginxProbeTimeoutMax)
		case err != nil:
			last = err
		case status == http.StatusOK && bytes.Contains(body, []byte("\nnode_cpu_seconds_total{")) &&
			bytes.Contains(body, []byte("\n"+marker+"\n")):
			select {
			case <-proc.done:
				last = errors.New("answered the readiness probe, but the node_exporter started here has exited: someone else serves this port")
			default:
				return nil
			}
		case status == http.StatusOK:
			last = fmt.Errorf("readiness probe: the page (%d bytes) lacks node_cpu_seconds_total or this start's token (another server on this port?)", len(body))
		default:
			last = fmt.Errorf("readiness probe got status %d, body %.40q (another server on this port?)", status, body)
		}
		if logContains(logPath, "address already in use") {
			return errAddrInUse
		}
		select {
		case <-proc.done:
			return fmt.Errorf("node_exporter exited during start (%s)", exitDesc(proc.waitErr))
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last probe: %v", context.Cause(ctx), last)
		case <-proc.done: // reported on the next round, after a last look at the log
		case <-tick.C:
		}
	}
}

// probeBody GETs url and returns the status and (at most
// nodeExporterProbeLimit bytes of) the body.
func probeBody(ctx context.Context, client *http.Client, url string, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, nodeExporterProbeLimit))
	return resp.StatusCode, b, err
}

// NodeExporter starts a private node_exporter for the test with
// StartNodeExporter (bounded by the test's context and
// NodeExporterReadyTimeout) and registers t.Cleanup to stop it and remove
// its directory; a failing Stop is reported with t.Errorf. It skips or fails
// the test as RequireBinary does when prometheus-node-exporter is not
// installed, and fails the test if it does not start. Call it from the test
// goroutine.
func NodeExporter(t testing.TB) *Server {
	t.Helper()
	RequireBinary(t, "prometheus-node-exporter", NodeExporterPaths...)
	s, err := StartNodeExporter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping node_exporter: %v", err)
		}
	})
	return s
}
