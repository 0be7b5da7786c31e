package runner

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
)

// Job is a prepared scenario: everything a run needs, checked and
// compiled. Its fields are read-only. Run it with Run (through Config);
// Close it when done, whether it ran or not.
type Job struct {
	Scenario *scenario.Scenario
	Segment  plan.Segment
	Plan     *plan.Plan
	Driver   driver.Config
	Actions  []driver.Action // compiled, in the scenario's order
	Kind     string          // the engine chosen: io_uring, epoll or goroutines
	Threads  int             // event-loop threads asked for (0: automatic)
	// Thresholds are the scenario's and the settings', with the family's
	// defaults (driver.Thresholder).
	Thresholds []threshold.Threshold
	// Counters are read beside the load: the machine, the server
	// processes, node_exporter pages, the driver's own
	// (driver.CounterSources) and the generator.
	Counters *sampler.Sampler
	// Target is where the load goes.
	Target *Target

	ownsTarget bool
	given      map[string]string
	version    string
	closeOnce  sync.Once
	closeErr   error
}

// Preflight checks the target before anything runs, when the driver can
// (driver.Preflighter). A failure is an *Error of kind Unable. Settings
// the server negotiates there show in the Meta built after it.
func (j *Job) Preflight(ctx context.Context) error {
	if pf, ok := j.Driver.(driver.Preflighter); ok {
		if err := pf.Preflight(ctx); err != nil {
			hint := "is the server running?"
			if driver.Classify(err) == driver.Auth {
				hint = "the server refused the credentials:"
			}
			return unable(fmt.Errorf("%w\n(%s nothing was run)", err, hint))
		}
	}
	return nil
}

// Config is the runner's configuration of the job, writing its result at
// out with meta (from Meta, amended by the caller as it likes): every
// repetition of the scenario, judged at the end (Finish). The caller adds
// its hooks, or changes Runs to run the repetitions one at a time.
func (j *Job) Config(meta result.Meta, out string) Config {
	s := j.Scenario
	return Config{
		Plan: j.Plan, Driver: j.Driver, Actions: j.Actions, Kind: j.Kind, Threads: j.Threads,
		Runs: s.Runs, Trim: s.Trim, Out: out, Meta: meta, Counters: j.Counters,
		// A GOMAXPROCS the user set is kept as set.
		AutoProcs: os.Getenv("GOMAXPROCS") == "",
		Finish:    j.Finish,
	}
}

// Finish completes a run of this job before its result is written: each
// repetition's validity verdict, the run's, and the thresholds' outcomes.
func (j *Job) Finish(run *result.Run) { Finish(run, j.Thresholds) }

// Close releases what the job holds: the embedded server it started (a
// Target given in the Request is left running). It may be called more
// than once.
func (j *Job) Close() error {
	j.closeOnce.Do(func() {
		if j.ownsTarget && j.Target != nil {
			j.closeErr = j.Target.Close()
		}
	})
	return j.closeErr
}

// Finish completes a run before its result is written: each repetition's
// validity verdict, the run's, and the outcomes of the thresholds, all kept
// in the result.
func Finish(run *result.Run, ths []threshold.Threshold) {
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
