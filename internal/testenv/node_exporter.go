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

// nodeExporterSpec is Debian's prometheus-node-exporter.
var nodeExporterSpec = spec{name: "node_exporter", bin: "prometheus-node-exporter", paths: NodeExporterPaths,
	ready: NodeExporterReadyTimeout, poll: nodeExporterPollInterval, inUse: []string{"address already in use"}}

// startNodeExporter is StartNodeExporter with the port source as a
// parameter (for tests).
func startNodeExporter(ctx context.Context, nextPort func() (int, error)) (*Server, error) {
	return nodeExporterSpec.start(ctx, 0, nextPort, func(_ context.Context, _, dir string, port int) (launch, error) {
		return nodeExporterConfigure(dir, port)
	})
}

// nodeExporterConfigure writes the textfile collector's directory with a
// per-start token into dir.
func nodeExporterConfigure(dir string, port int) (launch, error) {
	textfile := filepath.Join(dir, "textfile")
	if err := os.Mkdir(textfile, 0o755); err != nil {
		return launch{}, err
	}
	tokenBytes := make([]byte, 16)
	rand.Read(tokenBytes)
	marker := `throng_testenv_ready{token="` + hex.EncodeToString(tokenBytes) + `"} 1`
	if err := os.WriteFile(filepath.Join(textfile, "throng_ready.prom"), []byte(marker+"\n"), 0o644); err != nil {
		return launch{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	url := "http://" + addr + "/metrics"
	client := probeClient()
	timeout := nginxProbeTimeoutMin
	return launch{args: []string{
		"--web.listen-address=" + addr,
		"--collector.textfile.directory=" + textfile,
		"--collector.netdev.device-exclude=^$",
		"--no-collector.systemd",
	}, addr: addr, url: "http://" + addr, probe: func(ctx context.Context) error {
		status, body, err := probeBody(ctx, client, url, timeout)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			err = fmt.Errorf("no answer within %v", timeout)
			timeout = min(2*timeout, nginxProbeTimeoutMax)
			return err
		case err != nil:
			return err
		case status == http.StatusOK && bytes.Contains(body, []byte("\nnode_cpu_seconds_total{")) &&
			bytes.Contains(body, []byte("\n"+marker+"\n")):
			return nil
		case status == http.StatusOK:
			return fmt.Errorf("readiness probe: the page (%d bytes) lacks node_cpu_seconds_total or this start's token (another server on this port?)", len(body))
		}
		return fmt.Errorf("readiness probe got status %d, body %.40q (another server on this port?)", status, body)
	}}, nil
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
	return started(t, &nodeExporterSpec, StartNodeExporter)
}
