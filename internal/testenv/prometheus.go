package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PrometheusPaths are the places besides PATH where StartPrometheus looks
// for Debian's prometheus binary (package prometheus, which also ships
// promtool).
var PrometheusPaths = []string{"/usr/bin/prometheus"}

// PrometheusReadyTimeout bounds how long StartPrometheus waits for one
// Prometheus to become ready (it replays an empty write-ahead log first).
const PrometheusReadyTimeout = 30 * time.Second

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// Targets are host:port addresses scraped at /metrics (job "throng").
	Targets []string
	// ScrapeInterval is the scrape and evaluation interval (default 1s).
	ScrapeInterval time.Duration
	// RemoteWrite enables the remote-write receiver at URL +
	// "/api/v1/write" (--web.enable-remote-write-receiver).
	RemoteWrite bool
	// NativeHistograms enables the native-histograms feature: scrapes
	// negotiate protobuf and keep native histograms.
	NativeHistograms bool
}

// PrometheusServer is a running private Prometheus.
type PrometheusServer struct {
	*Server
	// WriteURL is the remote-write receiver's URL (with RemoteWrite).
	WriteURL string
}

// StartPrometheus starts a private Prometheus server (Debian's package
// prometheus) on 127.0.0.1, on a port free at start time, with its
// configuration and TSDB in a fresh directory under os.TempDir() (Dir),
// its log in Dir/prometheus.log (ErrorLog), and blocks until it is ready:
// GET /-/ready answers 200 and /api/v1/status/config shows this start's
// random token (an external label), while the process started here is
// still running. ctx governs the start only; stop it with Stop.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*PrometheusServer, error) {
	return startPrometheus(ctx, opts, FreePort)
}

// startPrometheus is StartPrometheus with the port source as a parameter
// (for tests).
func startPrometheus(ctx context.Context, opts PrometheusOptions, nextPort func() (int, error)) (*PrometheusServer, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testenv: prometheus: not started: %w", err)
	}
	bin, err := FindBinary("prometheus", PrometheusPaths...)
	if err != nil {
		return nil, err
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	return onFreePort("prometheus", nextPort, func(port int) (*PrometheusServer, error) {
		return startPrometheusOnce(ctx, bin, opts, port)
	})
}

func startPrometheusOnce(ctx context.Context, bin string, opts PrometheusOptions, port int) (_ *PrometheusServer, err error) {
	dir, err := newPrivateDir("prometheus")
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
	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	var targets []string
	for _, t := range opts.Targets {
		targets = append(targets, strconv.Quote(t))
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
  external_labels:
    testenv_token: %q
scrape_configs:
  - job_name: throng
    scrape_timeout: %s
    static_configs:
      - targets: [%s]
`, opts.ScrapeInterval, opts.ScrapeInterval, token, opts.ScrapeInterval, strings.Join(targets, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: prometheus: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=info"}
	if opts.RemoteWrite {
		args = append(args, "--web.enable-remote-write-receiver")
	}
	if opts.NativeHistograms {
		args = append(args, "--enable-feature=native-histograms")
	}
	logPath := filepath.Join(dir, "prometheus.log")
	proc, err = startProcess(dir, logPath, bin, args...)
	if err != nil {
		return nil, fmt.Errorf("testenv: prometheus: starting %s: %w", bin, err)
	}
	base := "http://" + addr
	if err := waitPrometheusReady(ctx, proc, base, token, logPath); err != nil {
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("testenv: prometheus: %s: %w", addr, err)
		}
		return nil, fmt.Errorf("testenv: prometheus on %s (pid %d) did not become ready: %w%s", addr, proc.pid, err, logSuffix(logPath))
	}
	s := &PrometheusServer{Server: &Server{Name: "prometheus", Addr: addr, URL: base, Dir: dir, PID: proc.pid,
		ErrorLog: logPath, proc: proc, stopSignal: syscall.SIGTERM}}
	if opts.RemoteWrite {
		s.WriteURL = base + "/api/v1/write"
	}
	return s, nil
}

func waitPrometheusReady(ctx context.Context, proc *process, base, token, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, PrometheusReadyTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		status, _, err := probe(ctx, client, base+"/-/ready", time.Second)
		switch {
		case err != nil:
			last = err
		case status != http.StatusOK:
			last = fmt.Errorf("/-/ready: status %d", status)
		default:
			_, body, err := probeBody(ctx, client, base+"/api/v1/status/config", time.Second)
			switch {
			case err != nil:
				last = err
			case !strings.Contains(string(body), token):
				last = errors.New("ready, but not with this start's configuration (another server on this port?)")
			default:
				select {
				case <-proc.done:
					last = errors.New("answered, but the prometheus started here has exited: someone else serves this port")
				default:
					return nil
				}
			}
		}
		if logContains(logPath, "address already in use") {
			return errAddrInUse
		}
		select {
		case <-proc.done:
			if logContains(logPath, "address already in use") { // written before it exited
				return errAddrInUse
			}
			return fmt.Errorf("prometheus exited during start (%s)", exitDesc(proc.waitErr))
		case <-ctx.Done():
			return fmt.Errorf("%w; last probe: %v", context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}

// PromSample is one element of an instant query's vector result.
type PromSample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query over the HTTP API and returns its
// vector (a scalar result comes back as one sample with no labels).
func (p *PrometheusServer) Query(ctx context.Context, q string) ([]PromSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	value := func(v []any) (float64, error) {
		if len(v) != 2 {
			return 0, fmt.Errorf("query %q: value %v", q, v)
		}
		s, _ := v[1].(string)
		return strconv.ParseFloat(s, 64)
	}
	switch r.Data.ResultType {
	case "scalar":
		var v []any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		f, err := value(v)
		return []PromSample{{Value: f}}, err
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &vs); err != nil {
			return nil, err
		}
		out := make([]PromSample, len(vs))
		for i, v := range vs {
			f, err := value(v.Value)
			if err != nil {
				return nil, err
			}
			out[i] = PromSample{Labels: v.Metric, Value: f}
		}
		return out, nil
	}
	return nil, fmt.Errorf("query %q: result type %s", q, r.Data.ResultType)
}

// Prometheus starts a private Prometheus for the test with StartPrometheus
// and registers t.Cleanup to stop it; it skips or fails the test as
// RequireBinary does when prometheus is not installed.
func Prometheus(t testing.TB, opts PrometheusOptions) *PrometheusServer {
	t.Helper()
	RequireBinary(t, "prometheus", PrometheusPaths...)
	s, err := StartPrometheus(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping prometheus: %v", err)
		}
	})
	return s
}

// WaitScraping waits until Prometheus has tried to scrape each of its n
// targets once (its discovery hands new targets over within about 5 s of
// the start): up{job="throng"} has n series, whether the targets answer
// or not yet. It gives up after PrometheusReadyTimeout.
func (p *PrometheusServer) WaitScraping(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, PrometheusReadyTimeout)
	defer cancel()
	for {
		got, err := p.Query(ctx, `up{job="throng"}`)
		if err == nil && len(got) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: prometheus: %d targets not scraped within %s (last: %v %v)", n, PrometheusReadyTimeout, got, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
