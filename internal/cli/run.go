package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
	"github.com/throng-io/throng/presets"
)

// overrides maps the run flags that change a scenario value to its key path.
// Every value is given as text and parsed like the file's (units included).
var overrides = []struct{ flag, path, typ, help string }{
	{"users", "users", "int", "number of simulated users"},
	{"duration", "phases.steady", "duration", "steady-state duration, like 90s or 2h"},
	{"iterations", "closed.iterations", "int", "actions per user in a closed run (clears the scenario's closed.total)"},
	{"total", "closed.total", "int", "actions shared by the users of a closed run, each free user taking the next, like smtp-source -m (clears the scenario's closed.iterations)"},
	{"rate", "open.rate", "rate", "aggregate arrival rate of an open run, like 500/s"},
	{"speedup", "speedup", "float", "multiply every rate and divide think times (simulate an 8-hour day in minutes)"},
	{"target", "target", "url", `"embedded", or the server's URL, like http://127.0.0.1:8080`},
	{"runs", "runs", "int", "repetitions of the whole scenario"},
	{"trim", "trim", "int", "repetitions dropped at each end of the ranking before the mean"},
	{"seed", "seed", "int", "seed of all randomness"},
	{"label", "label", "string", "name of this configuration in reports"},
	{"interval", "interval", "duration", "recording interval, like 1s"},
	{"max-duration", "max_duration", "duration", "hard bound on one repetition, like 10m"},
	{"engine", "engine.kind", "kind", "auto, io_uring, epoll or goroutines"},
	{"threads", "engine.threads", "int", "event-loop threads (0: one per core, at most one per user)"},
}

// engineKinds are the values --engine takes (completion offers them).
var engineKinds = []string{"auto", "io_uring", "epoll", "goroutines"}

// textFlag is a flag kept as the text given, parsed later like the
// scenario file's value (units included), whose help shows the kind of
// value it takes (int, duration, rate) instead of "string".
type textFlag struct {
	v   *string
	typ string
}

func (t textFlag) String() string     { return *t.v }
func (t textFlag) Set(v string) error { *t.v = v; return nil }
func (t textFlag) Type() string       { return t.typ }

type runFlags struct {
	out        string
	segment    string
	weights    string
	startAt    string
	quiet      bool
	interleave bool // several configurations: alternate their repetitions
	values     map[string]*string
	processes  []string
	nodes      []string
	agentFlags
	thresholds  []string
	sets        []string
	subscribers string
	size        string
	junit       string
	prometheus  string
	linger      time.Duration
	outputs     []string
}

func runCommand(prep *runner.Preparer, stdout, stderr io.Writer) *cobra.Command {
	cmd, _ := runCommandFlags(prep, stdout, stderr)
	return cmd
}

// runCommandFlags is runCommand with the flags it fills.
func runCommandFlags(prep *runner.Preparer, stdout, stderr io.Writer) (*cobra.Command, *runFlags) {
	f := &runFlags{values: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|PRESET [MORE.yaml ...]",
		Short: "Run a scenario file or a built-in preset",
		Long: `Run a scenario file or a built-in preset. Flags override the scenario's values.

While it runs, one line shows the progress. At the end a table summarizes each
phase. The journal (JSON Lines, flushed every interval) and the result file are
written under results/ unless --out says otherwise; Ctrl-C (exit 130) or SIGTERM
(exit 143) stops cleanly and still writes the result, marked partial.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeScenario,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return runMany(cmd, prep, args, f, stdout, stderr)
			}
			return runRun(cmd, prep, args[0], f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	for _, o := range overrides {
		v := new(string)
		f.values[o.flag] = v
		fl.Var(textFlag{v, o.typ}, o.flag, o.help)
	}
	fl.StringVarP(&f.out, "out", "o", "", "result file (default results/NAME-TIME.json); the journal goes beside it; - also writes the result JSON to stdout (the summary then goes to stderr)")
	fl.StringVar(&f.segment, "segment", "1/1", "run segment k of n: n processes with 1/n..n/n together run the whole plan")
	fl.StringVar(&f.weights, "weights", "", "with --segment: the n segments' weights, like 1,3 (segment k gets w_k/Σw of the users)")
	fl.StringVar(&f.startAt, "start-at", "", "start at this time (RFC 3339, like 2026-11-21T15:04:05Z), so segments on several machines start together")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress line")
	fl.StringArrayVar(&f.processes, "server-process", nil, "read this server process and its children: NAME, PID or pidfile:PATH (repeatable)")
	fl.StringArrayVar(&f.nodes, "node-exporter", nil, "read a machine's counters from its node_exporter page URL (repeatable)")
	f.agentFlags.register(fl, "run over these agents (host:port,...): agent k runs segment k/n; see throng agent")
	fl.StringArrayVar(&f.sets, "set", nil, "give a scenario variable (vars:) a value: name=value (repeatable)")
	fl.Var(textFlag{&f.subscribers, "int"}, "subscribers", "shorthand for --set subscribers=N (pub/sub presets)")
	fl.Var(textFlag{&f.size, "size"}, "size", "shorthand for --set size=SIZE (message or file size of presets that declare it)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, `a pass/fail limit, like "p95 < 500ms" or "ramp-up: error_rate < 1%" (repeatable; exit code 1 when one fails)`)
	fl.StringVar(&f.junit, "junit", "", "write the thresholds' outcomes as JUnit XML to this file")
	fl.BoolVar(&f.interleave, "interleave", true, "with several scenarios: run their repetitions alternately, A B A B ... (false: all of A, then all of B)")
	fl.StringVar(&f.prometheus, "prometheus", "", "serve live metrics for Prometheus at this address (like 127.0.0.1:9464) during the run: cumulative counters and latency histograms")
	fl.DurationVar(&f.linger, "prometheus-linger", 0, "with --prometheus: keep the metrics page up this long after the run, for a last scrape (like 15s)")
	fl.StringArrayVar(&f.outputs, "output", nil, "send every interval to an output too: csv=FILE, prometheus-rw=URL (remote write), otlp=URL (OpenTelemetry, OTLP/HTTP) (repeatable; see docs/outputs.md)")
	_ = cmd.RegisterFlagCompletionFunc("engine", completeValues(engineKinds))
	return cmd, f
}

// readScenario finds a scenario by file path or preset name and returns
// its file name and text.
func readScenario(arg string) (runner.Source, error) {
	_, statErr := os.Stat(arg)
	switch {
	case statErr == nil:
		b, err := scenario.ReadFile(arg)
		if err != nil {
			return runner.Source{}, badInput(err)
		}
		return runner.Source{File: arg, Text: b}, nil
	case strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml"):
		return runner.Source{}, badInput(fmt.Errorf("scenario file %s: %w", arg, statErr))
	}
	pf, b, ok := presets.Source(arg)
	if !ok {
		return runner.Source{}, badInput(fmt.Errorf("no scenario file or preset named %q; `throng presets` lists the presets: %s",
			arg, strings.Join(presets.Names(), ", ")))
	}
	return runner.Source{File: pf, Text: b}, nil
}

// loadScenarioWith finds a scenario by file path or preset name and
// decodes it with values for its variables (name -> value, as --set gives
// them). When the file decodes with problems, the scenario is returned
// with them (as scenario.Errors); when it is no scenario at all, only an
// error.
func loadScenarioWith(prep *runner.Preparer, arg string, vars map[string]string) (*scenario.Scenario, error) {
	src, err := readScenario(arg)
	if err != nil {
		return nil, err
	}
	var settings []runner.Setting
	for k, v := range vars {
		settings = append(settings, runner.Setting{Key: "vars." + k, Value: v, From: "flag --set"})
	}
	l, err := prep.Load(runner.Request{Source: src, Settings: settings})
	if err != nil {
		return nil, exitOf(err)
	}
	if problems := l.Problems(); len(problems) > 0 {
		return l.Scenario, problems
	}
	return l.Scenario, nil
}

// runSettings turns the run's flags that change the scenario into
// settings by key path, in order (repeatable flags once per value), each
// naming its flag for messages. --set NAME=VALUE, --subscribers and --size
// give variables (vars.NAME); --rate the open model's rate, or the
// scenario's variable rate when it declares one (the runner's rule).
func runSettings(cmd *cobra.Command, f *runFlags) ([]runner.Setting, error) {
	var out []runner.Setting
	add := func(key, value, flag string) {
		out = append(out, runner.Setting{Key: key, Value: value, From: "flag " + flag})
	}
	for _, o := range overrides {
		if cmd.Flags().Changed(o.flag) {
			add(o.path, *f.values[o.flag], "--"+o.flag)
		}
	}
	for _, p := range f.processes {
		add("counters.processes", p, "--server-process")
	}
	for _, u := range f.nodes {
		add("counters.node_exporter", u, "--node-exporter")
	}
	for _, t := range f.thresholds {
		add("thresholds", t, "--threshold")
	}
	for _, v := range f.sets {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, badInput(fmt.Errorf("--set %q: want name=value", v))
		}
		add("vars."+strings.TrimSpace(k), val, "--set")
	}
	if cmd.Flags().Changed("subscribers") {
		add("vars.subscribers", f.subscribers, "--set")
	}
	if cmd.Flags().Changed("size") {
		add("vars.size", f.size, "--set")
	}
	return out, nil
}

// exitOf gives an error of the runner's preparation its exit code: bad
// input 2, work that cannot be done 4, stopped 130 (a signal's own code
// replaces it: interruptedOr). An error that has its code keeps it.
func exitOf(err error) error {
	var re *runner.Error
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case !errors.As(err, &re):
		return failure(err)
	case re.Kind == runner.BadInput:
		return badInput(err)
	case re.Kind == runner.Stopped:
		return &exitError{ExitInterrupted, err}
	}
	return failure(err)
}

func runRun(cmd *cobra.Command, prep *runner.Preparer, arg string, f *runFlags, stdout, stderr io.Writer) error {
	settings, err := runSettings(cmd, f)
	if err != nil {
		return err
	}
	src, err := readScenario(arg)
	if err != nil {
		return err
	}
	if err := checkRunFlags(f, false); err != nil {
		return err
	}
	specs, err := checkOutputFlags(f)
	if err != nil {
		return err
	}
	if len(f.agents) > 0 {
		if f.prometheus != "" || len(specs) > 0 {
			return badInput(errors.New("--prometheus and --output are not available with --agents yet: run them on the controller's result (throng report)"))
		}
		return runDistributed(prep, src, settings, f, stdout, stderr)
	}
	seg, err := parseSegment(f.segment, f.weights)
	if err != nil {
		return badInput(err)
	}
	var startAt time.Time
	if f.startAt != "" {
		if startAt, err = time.Parse(time.RFC3339Nano, f.startAt); err != nil {
			return badInput(fmt.Errorf("--start-at %q: want a time like 2026-11-21T15:04:05Z", f.startAt))
		}
	}
	// The exporter's address is taken before the run is prepared: a bad
	// or busy address is found in a moment, not after a long preparation.
	var promLn net.Listener
	if f.prometheus != "" {
		if promLn, err = net.Listen("tcp", f.prometheus); err != nil {
			return badInput(fmt.Errorf("--prometheus %s: %w", f.prometheus, err))
		}
		defer promLn.Close() // closed already when the outputs took it
	}
	// From here on a signal stops the run cleanly: compiling a large
	// plan, checking the target and waiting for --start-at included.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig, stopSignals := stopOnSignal(cancel, stderr)
	defer stopSignals()
	job, err := prep.Prepare(ctx, runner.Request{Source: src, Settings: settings, Segment: seg})
	if err != nil {
		return interruptedOr(sig(), exitOf(err))
	}
	defer job.Close()
	s := job.Scenario
	o := resolveOut(f.out, s.Name)
	out := o.path
	if err := job.Preflight(ctx); err != nil {
		return interruptedOr(sig(), exitOf(err))
	}
	if !startAt.IsZero() {
		if err := waitUntil(ctx, startAt, stderr); err != nil {
			return interruptedOr(sig(), err)
		}
	}
	meta := job.Meta()
	if f.startAt != "" {
		meta.Overrides["start_at"] = f.startAt
		meta.RunID = runner.RunID(meta, seg) // the segments share their start
	}
	lv := newLive(stderr, job.Plan, s.Runs, f.quiet)
	lv.header(&meta, out)
	cfg := job.Config(meta, out)
	cfg.OnInterval, cfg.OnRepetition, cfg.Warn = lv.interval, lv.repetition, lv.warn
	outs, err := startOutputs(ctx, f, promLn, specs, &meta, stderr)
	if err != nil {
		return err
	}
	if outs != nil {
		cfg.OnRepetitionStart = outs.repetitionStart
		cfg.OnInterval = func(rep int, iv *result.Interval) {
			outs.interval(rep, iv)
			lv.interval(rep, iv)
		}
		jobFinish := cfg.Finish
		cfg.Finish = func(run *result.Run) {
			outs.finish(run)
			jobFinish(run)
		}
	}
	run, rec, runErr := runner.Run(ctx, cfg)
	lv.done()
	err = o.emit(stdout, finishRun(run, rec, runErr, sig(), job.Thresholds, f.junit, o.summary(stdout, stderr)))
	if outs != nil {
		if run == nil { // the run never started: no Finish
			outs.fan.Close(outputsCloseTimeout)
		}
		outs.stop(ctx)
	}
	return err
}

// defaultOut is the result file of a run given no --out: under results/,
// named after the scenario (runner.FileName) and the time.
func defaultOut(name string) string {
	return filepath.Join("results", fmt.Sprintf("%s-%s.json", runner.FileName(name), time.Now().Format("20060102-150405")))
}

// finishRun prints a run's summary (made from memory: it needs no file),
// checks its thresholds, says where the result and the journal went, and
// turns the run's end into an exit code. When several causes meet, the
// gravest gives the code (exitPrecedence): a result not written where asked
// or a run that failed (4, even when the result was written elsewhere),
// then the signal that stopped it (130, 143), then failed thresholds (1),
// then a partial run (3).
func finishRun(run *result.Run, rec *runner.Record, runErr error, sig os.Signal, ths []threshold.Threshold, junit string, stdout io.Writer) error {
	if run == nil {
		return failure(runErr)
	}
	if err := report.Text(stdout, run); err != nil {
		return failure(err)
	}
	where, saveErr := rec.Describe()
	var outs []threshold.Outcome
	var junitErr error
	if runErr == nil {
		// The summary printed the outcomes kept in the result.
		outs = threshold.EvaluateAll(run, ths)
		if junit != "" {
			junitErr = writeJUnit(junit, run, outs)
		}
	}
	fmt.Fprintf(stdout, "\n%s\n", where)
	return exitPrecedence(errors.Join(runErr, saveErr, junitErr), sig, threshold.Failures(outs), len(outs), run)
}

// exitPrecedence is the exit of a run that ended: failed (the run, or
// writing its result where asked) 4, else stopped by a signal 130 or 143,
// else failed thresholds 1, else partial 3, else nil.
func exitPrecedence(failed error, sig os.Signal, thFailed, thTotal int, run *result.Run) error {
	switch {
	case failed != nil:
		return failure(failed)
	case sig != nil:
		return &exitError{signalExit(sig), fmt.Errorf("stopped by %s; the partial result was written", signalName(sig))}
	case thFailed > 0:
		return &exitError{ExitThresholds, fmt.Errorf("%d of %d thresholds failed", thFailed, thTotal)}
	case run.Partial:
		return &exitError{ExitPartial, fmt.Errorf("partial result: %s", run.Reason)}
	}
	return nil
}

// parseSegment reads --segment k/n and --weights w1,...,wn.
func parseSegment(segment, weights string) (plan.Segment, error) {
	seg, err := plan.ParseSegment(segment)
	if err != nil {
		return seg, fmt.Errorf("--segment: %w", err)
	}
	ws, err := plan.ParseWeights(weights)
	if err != nil {
		return seg, fmt.Errorf("--weights: %w", err)
	}
	seg, err = plan.NewSegment(seg.K, seg.N, ws)
	if err != nil {
		return seg, fmt.Errorf("--segment %s --weights %s: %w", segment, weights, err)
	}
	return seg, nil
}

// waitUntil sleeps until t (or returns at once when t is past), unless the
// run is stopped first.
func waitUntil(ctx context.Context, t time.Time, stderr io.Writer) error {
	d := time.Until(t)
	if d <= 0 {
		fmt.Fprintf(stderr, "throng: --start-at %s is %s past; starting now\n", t.Format(time.RFC3339Nano), (-d).Round(time.Millisecond))
		return nil
	}
	fmt.Fprintf(stderr, "throng: waiting %s to start at %s\n", d.Round(time.Millisecond), t.Format(time.RFC3339Nano))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return errors.New("stopped before the start time")
	}
}
