package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/throng-io/throng/internal/driver"

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
	for _, j := range s.Journeys {
		names = append(names, scenario.JourneyPrefix+j.Name)
	}
	// The driver's events are actions of the result too (deliver.p99).
	if fam, err := familyByName(s.Driver); err == nil {
		names = append(names, fam.events...)
	}
	for i, text := range s.Thresholds {
		path := fmt.Sprintf("thresholds[%d]", i)
		t, err := threshold.Parse(text)
		if err == nil && !deferredAction(t.Action) {
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

// checkJourneys checks, once the driver's block is decoded and its actions
// compiled, what depends on both: a scenario with journeys needs a family
// that runs them; a data set must be long enough for the plan
// (driver.PlanChecker); a threshold on a driver's event row (check:NAME)
// must name one.
func checkJourneys(s *scenario.Scenario, drv driver.Config, ths []threshold.Threshold) []error {
	var errs []error
	if _, ok := drv.(driver.Journeys); s.HasJourneys() && !ok {
		errs = append(errs, s.Errorf("journeys", "the %s family does not run journeys: give actions", s.Driver))
	}
	if pc, ok := drv.(driver.PlanChecker); ok {
		errs = append(errs, placeErrors(s, pc.CheckPlan(s.Users, s.Closed.Iterations))...)
	}
	var names []string
	for _, a := range s.Actions {
		names = append(names, a.Name)
	}
	for _, j := range s.Journeys {
		names = append(names, scenario.JourneyPrefix+j.Name)
	}
	if ev, ok := drv.(driver.Events); ok {
		names = append(names, ev.EventActions()...)
	}
	for i, t := range ths {
		if t.Default || !deferredAction(t.Action) {
			continue
		}
		if err := t.CheckAction(names); err != nil {
			errs = append(errs, s.Errorf(fmt.Sprintf("thresholds[%d]", i), "%v", err))
		}
	}
	return errs
}

// deferredAction reports whether a threshold's action is a row known only
// once the driver's block is decoded (a web check: "check:NAME").
func deferredAction(action string) bool {
	return strings.HasPrefix(action, "check:")
}
