package testenv

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// A private Prometheus scrapes its target every second: a query returns
// the target's value; Stop removes its directory.
func TestPrometheusScrapes(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte("# TYPE testenv_probe_total counter\ntestenv_probe_total 42\n"))
	}))
	defer target.Close()
	p := Prometheus(t, PrometheusOptions{Targets: []string{strings.TrimPrefix(target.URL, "http://")}, RemoteWrite: true})
	if p.Name != "prometheus" || !strings.HasPrefix(p.Addr, "127.0.0.1:") || p.WriteURL != p.URL+"/api/v1/write" || !p.Alive() {
		t.Fatalf("%+v", p)
	}
	ctx := context.Background()
	if err := p.WaitScraping(ctx, 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := p.Query(ctx, `testenv_probe_total{job="throng"}`)
		if err == nil && len(got) == 1 && got[0].Value == 42 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scraped value: %+v %v", got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := p.Query(ctx, `sum(`); err == nil {
		t.Error("a bad query is no error")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", p.Dir, err)
	}
}

// A port held by another server is not taken for this Prometheus: the
// start moves to another port.
func TestPrometheusPortTaken(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "prometheus", PrometheusPaths...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("Prometheus Server is Ready.")) }))
	taken := l.Addr().(*net.TCPAddr).Port
	first := true
	p, err := startPrometheus(t.Context(), PrometheusOptions{}, func() (int, error) {
		if first {
			first = false
			return taken, nil
		}
		return FreePort()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if p.Addr == l.Addr().String() {
		t.Fatalf("took the foreign server's port %s", p.Addr)
	}
}
