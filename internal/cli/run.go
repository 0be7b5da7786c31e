package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/presets"
)

// overrides maps the run flags that change a scenario value to its key path.
// Every value is given as text and parsed like the file's (units included).
var overrides = []struct{ flag, path, help string }{
	{"users", "users", "number of simulated users"},
	{"duration", "phases.steady", "steady-state duration, like 90s or 2h"},
	{"iterations", "closed.iterations", "actions per user in a closed run"},
	{"rate", "open.rate", "aggregate arrival rate of an open run, like 500/s"},
	{"speedup", "speedup", "multiply every rate and divide think times (simulate an 8-hour day in minutes)"},
	{"target", "target", `"embedded", or the server's URL, like http://127.0.0.1:8080`},
	{"runs", "runs", "repetitions of the whole scenario"},
	{"trim", "trim", "repetitions dropped at each end of the ranking before the mean"},
	{"seed", "seed", "seed of all randomness"},
	{"label", "label", "name of this configuration in reports"},
	{"interval", "interval", "recording interval, like 1s"},
	{"max-duration", "max_duration", "hard bound on one repetition, like 10m"},
	{"engine", "engine.kind", "auto, io_uring, epoll or goroutines"},
	{"threads", "engine.threads", "event-loop threads (0: one per core, at most one per user)"},
}

type runFlags struct {
	out     string
	segment string
	quiet   bool
	values  map[string]*string
}

func runCommand(stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{values: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|PRESET",
		Short: "Run a scenario file or a built-in preset",
		Long: `Run a scenario file or a built-in preset. Flags override the scenario's values.

While it runs, one line shows the progress. At the end a table summarizes each
phase. The journal (JSON Lines, flushed every interval) and the result file are
written under results/ unless --out says otherwise; Ctrl-C stops cleanly and
still writes the result, marked partial.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, args[0], f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	for _, o := range overrides {
		f.values[o.flag] = fl.String(o.flag, "", o.help)
	}
	fl.StringVarP(&f.out, "out", "o", "", "result file (default results/NAME-TIME.json); the journal goes beside it")
	fl.StringVar(&f.segment, "segment", "1/1", "run segment k of n: n processes with 1/n..n/n together run the whole plan")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress line")
	return cmd
}

// loadScenario finds a scenario by file path or preset name and decodes it.
// When the file decodes with problems, the scenario is returned with them
// (as scenario.Errors), so they can be reported with the validation's.
func loadScenario(arg string) (*scenario.Scenario, error) {
	var file string
	var src []byte
	_, statErr := os.Stat(arg)
	switch {
	case statErr == nil:
		b, err := scenario.ReadFile(arg)
		if err != nil {
			return nil, badInput(err)
		}
		file, src = arg, b
	case strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml"):
		return nil, badInput(fmt.Errorf("scenario file %s: %w", arg, statErr))
	default:
		pf, b, ok := presets.Source(arg)
		if !ok {
			return nil, badInput(fmt.Errorf("no scenario file or preset named %q; `throng presets` lists the presets: %s",
				arg, strings.Join(presets.Names(), ", ")))
		}
		file, src = pf, b
	}
	s, err := scenario.Decode(file, src, familyNames())
	if err != nil {
		var es scenario.Errors
		if s != nil && errors.As(err, &es) {
			return s, es
		}
		return nil, badInput(err)
	}
	return s, nil
}

// prepared is a scenario made ready to run.
type prepared struct {
	s       *scenario.Scenario
	plan    *plan.Plan
	drv     driver.Config
	actions []driver.Action
	kind    string
	threads int    // event-loop threads asked for (0: automatic)
	target  string // shown in reports
	stop    func() error
}

// prepare applies the flags, validates, starts the embedded target when
// asked, decodes the driver's block, compiles the actions and chooses the
// engine. Every problem of the scenario is reported at once.
func prepare(s *scenario.Scenario, seg plan.Segment, decodeErrs []error) (*prepared, error) {
	errs := append(decodeErrs, s.Validate()...)
	fam, err := familyByName(s.Driver)
	if err != nil {
		return nil, badInput(err)
	}
	pr := &prepared{s: s, threads: s.Engine.Threads, stop: func() error { return nil }}
	target := s.Target
	if len(errs) == 0 && target == "embedded" {
		url, stop, err := fam.serve("127.0.0.1:0")
		if err != nil {
			return nil, failure(fmt.Errorf("starting the embedded %s server: %w", fam.name, err))
		}
		target, pr.stop = url, stop
		pr.target = "embedded " + fam.name + " server at " + url
		// The embedded server runs in this process: leave it a core.
		if s.Engine.Threads == 0 {
			pr.threads = max(1, sampler.Cores()-1)
		}
	} else {
		pr.target = target
	}
	if len(errs) == 0 {
		drv, derrs := fam.decode(s.DriverConfig, target)
		errs = append(errs, derrs...)
		pr.drv = drv
		if len(derrs) == 0 {
			for _, a := range s.Actions {
				ca, aerrs := drv.Compile(a)
				errs = append(errs, aerrs...)
				pr.actions = append(pr.actions, ca)
			}
		}
	}
	if len(errs) > 0 {
		pr.stop()
		scenario.SortErrors(errs)
		return nil, badInput(scenario.Errors(errs))
	}
	p, err := plan.Compile(s, seg)
	if err != nil {
		pr.stop()
		return nil, badInput(err)
	}
	pr.plan = p
	kind, err := engine.Choose(s.Engine.Kind, pr.drv, pr.actions, p)
	if err != nil {
		pr.stop()
		return nil, badInput(s.Errorf("engine.kind", "%v", err))
	}
	pr.kind = kind
	return pr, nil
}

func runRun(cmd *cobra.Command, arg string, f *runFlags, stdout, stderr io.Writer) error {
	s, err := loadScenario(arg)
	var decodeErrs scenario.Errors
	if err != nil && !errors.As(err, &decodeErrs) {
		return err
	}
	given := map[string]string{}
	for _, o := range overrides {
		if cmd.Flags().Changed(o.flag) {
			v := *f.values[o.flag]
			if err := s.Set(o.path, "--"+o.flag, v); err != nil {
				return badInput(err)
			}
			given["--"+o.flag] = v
		}
	}
	seg, err := plan.ParseSegment(f.segment)
	if err != nil {
		return badInput(fmt.Errorf("--segment: %w", err))
	}
	pr, err := prepare(s, seg, decodeErrs)
	if err != nil {
		return err
	}
	defer pr.stop()

	out := f.out
	if out == "" {
		out = filepath.Join("results", fmt.Sprintf("%s-%s.json", s.Name, time.Now().Format("20060102-150405")))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if pf, ok := pr.drv.(preflighter); ok {
		if err := pf.Preflight(ctx); err != nil {
			return failure(fmt.Errorf("%w\n(is the server running? nothing was run)", err))
		}
	}
	interrupted := stopOnSignal(cancel, stderr)

	meta := buildMeta(pr, given, seg)
	lv := newLive(stderr, pr.plan, s.Runs, f.quiet)
	run, runErr := runner.Run(ctx, runner.Config{
		Plan: pr.plan, Driver: pr.drv, Actions: pr.actions, Kind: pr.kind, Threads: pr.threads,
		Runs: s.Runs, Trim: s.Trim, Out: out, Meta: meta,
		OnInterval:   lv.interval,
		OnRepetition: lv.repetition,
	})
	lv.done()
	if run == nil {
		return failure(runErr)
	}
	if err := report.Text(stdout, run); err != nil {
		return failure(err)
	}
	if runErr != nil {
		return failure(runErr)
	}
	fmt.Fprintf(stdout, "\nResult: %s (journal %s)\n", out, result.JournalPath(out))
	switch {
	case interrupted():
		return &exitError{ExitInterrupted, errors.New("interrupted; the partial result was written")}
	case run.Partial:
		return &exitError{ExitPartial, fmt.Errorf("partial result: %s", run.Reason)}
	}
	return nil
}

// stopOnSignal cancels the run on SIGINT or SIGTERM (the run then stops
// cleanly and writes its result); a second signal exits at once, leaving
// the journal. It returns a function telling whether a signal came.
func stopOnSignal(cancel context.CancelCauseFunc, stderr io.Writer) func() bool {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	got := make(chan struct{})
	go func() {
		sig := <-ch
		close(got)
		name := "SIGTERM"
		if sig == os.Interrupt {
			name = "SIGINT"
		}
		fmt.Fprintf(stderr, "\nthrong: %s: stopping; the result will be written (again to quit at once)\n", name)
		cancel(fmt.Errorf("%w by %s", engine.ErrStopped, name))
		<-ch
		fmt.Fprintln(stderr, "throng: quitting now; the journal holds every finished interval")
		os.Exit(ExitInterrupted)
	}()
	return func() bool {
		select {
		case <-got:
			return true
		default:
			return false
		}
	}
}

func buildMeta(pr *prepared, given map[string]string, seg plan.Segment) result.Meta {
	s, p := pr.s, pr.plan
	sum := sha256.Sum256(s.Source)
	m := result.Meta{
		Scenario: s.Name, Description: s.Description, Label: s.Label, File: s.File,
		SourceSHA256: hex.EncodeToString(sum[:]), Source: string(s.Source),
		Overrides: given, Driver: s.Driver, Target: pr.target, Model: s.Model,
		Users: s.Users, Segment: seg.String(), Seed: s.Seed, Speedup: s.Speedup,
		IntervalS: s.Interval.D().Seconds(), Iterations: s.Closed.Iterations, RatePerS: p.Rate,
		Engine: pr.kind, Threads: engine.LoopThreads(pr.kind, pr.threads, len(p.Users)),
		Runs: s.Runs, Trim: s.Trim, MaxDurationS: p.MaxDuration.Seconds(),
		Host: hostInfo(), Versions: result.Versions{Throng: version(), Go: runtime.Version()},
		Command: os.Args, StartedAt: time.Now(),
	}
	if s.Model != scenario.Closed {
		m.Iterations = 0
	}
	if d, ok := pr.drv.(driver.Describer); ok {
		m.Settings = d.Describe()
	}
	for _, a := range p.Actions {
		m.Actions = append(m.Actions, a.Name)
	}
	for _, ph := range p.Phases {
		end := ph.End.Seconds()
		if ph.End == plan.Open {
			end = -1
		}
		m.Phases = append(m.Phases, result.PhaseMeta{Name: ph.Name, StartS: ph.Start.Seconds(), EndS: end})
	}
	return m
}
