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
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
)

// parseThresholds reads the scenario's thresholds (and --threshold flags),
// each problem positioned like the file's other errors.
func parseThresholds(s *scenario.Scenario) ([]threshold.Threshold, []error) {
	var out []threshold.Threshold
	var errs []error
	var names []string
	for _, a := range s.Actions {
		names = append(names, a.Name)
	}
	// The driver's events are actions of the result too (deliver.p99).
	if fam, err := familyByName(s.Driver); err == nil {
		names = append(names, fam.events...)
	}
	for i, text := range s.Thresholds {
		path := fmt.Sprintf("thresholds[%d]", i)
		t, err := threshold.Parse(text)
		if err == nil {
			err = t.CheckAction(names)
		}
		if err != nil {
			errs = append(errs, s.Errorf(path, "%v", err))
			continue
		}
		out = append(out, t)
	}
	return out, errs
}

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

// finishVerdicts returns what completes a run before its result is
// written: each repetition's validity verdict, the run's, and the
// thresholds' outcomes, all kept in the result.
func finishVerdicts(ths []threshold.Threshold) func(*result.Run) {
	return func(run *result.Run) {
		// The runner judged each repetition from its journal; a run made
		// otherwise (merged from agents) holds its intervals.
		for i := range run.Repetitions {
			rep := &run.Repetitions[i]
			rep.Validity = result.ValidityOf(&run.Meta, rep)
		}
		ok, _ := result.RunValid(run)
		run.Valid = &ok
		run.Thresholds = threshold.Records(threshold.EvaluateAll(run, ths))
	}
}
