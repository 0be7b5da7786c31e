package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// writeJUnit writes the thresholds' outcomes for CI systems.
func writeJUnit(path string, run *result.Run, outs []threshold.Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	w := bufio.NewWriter(f)
	err = threshold.WriteJUnit(w, run, outs)
	return errors.Join(err, w.Flush(), f.Close())
}

// serveExporter serves the live interval metrics for Prometheus on addr
// until the returned stop function is called.
func serveExporter(addr string, stderr io.Writer) (*report.Exporter, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--prometheus %s: %w", addr, err)
	}
	exp := report.NewExporter()
	mux := http.NewServeMux()
	mux.Handle("/metrics", exp)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "throng: live metrics at http://%s/metrics\n", ln.Addr())
	return exp, func() { srv.Close() }, nil
}
