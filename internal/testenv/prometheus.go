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

// prometheusSpec is Debian's prometheus.
var prometheusSpec = spec{name: "prometheus", bin: "prometheus", paths: PrometheusPaths,
	ready: PrometheusReadyTimeout, poll: 20 * time.Millisecond, inUse: []string{"address already in use"}}

// startPrometheus is StartPrometheus with the port source as a parameter
// (for tests).
func startPrometheus(ctx context.Context, opts PrometheusOptions, nextPort func() (int, error)) (*PrometheusServer, error) {
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	s, err := prometheusSpec.start(ctx, 0, nextPort, func(_ context.Context, _, dir string, port int) (launch, error) {
		return prometheusConfigure(dir, port, opts)
	})
	if err != nil {
		return nil, err
	}
	p := &PrometheusServer{Server: s}
	if opts.RemoteWrite {
		p.WriteURL = s.URL + "/api/v1/write"
	}
	return p, nil
}

// prometheusConfigure writes prometheus.yml, whose external label holds a
// per-start token, into dir.
func prometheusConfigure(dir string, port int, opts PrometheusOptions) (launch, error) {
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
		return launch{}, err
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
	base := "http://" + addr
	client := probeClient()
	return launch{args: args, addr: addr, url: base, probe: func(ctx context.Context) error {
		// Ready, and with this start's configuration.
		status, _, err := probe(ctx, client, base+"/-/ready", time.Second)
		switch {
		case err != nil:
			return err
		case status != http.StatusOK:
			return fmt.Errorf("/-/ready: status %d", status)
		}
		_, body, err := probeBody(ctx, client, base+"/api/v1/status/config", time.Second)
		switch {
		case err != nil:
			return err
		case !strings.Contains(string(body), token):
			return errors.New("ready, but not with this start's configuration (another server on this port?)")
		}
		return nil
	}}, nil
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
	return started(t, &prometheusSpec, func(ctx context.Context) (*PrometheusServer, error) { return StartPrometheus(ctx, opts) })
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
