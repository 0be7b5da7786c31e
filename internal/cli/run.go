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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
	"github.com/throng-io/throng/presets"
)

// overrides maps the run flags that change a scenario value to its key path.
// Every value is given as text and parsed like the file's (units included).
var overrides = []struct{ flag, path, help string }{
	{"users", "users", "number of simulated users"},
	{"duration", "phases.steady", "steady-state duration, like 90s or 2h"},
	{"iterations", "closed.iterations", "actions per user in a closed run (clears the scenario's closed.total)"},
	{"total", "closed.total", "actions shared by the users of a closed run, each free user taking the next, like smtp-source -m (clears the scenario's closed.iterations)"},
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
	out         string
	segment     string
	weights     string
	startAt     string
	quiet       bool
	values      map[string]*string
	processes   []string
	nodes       []string
	agents      []string
	agentsWait  time.Duration
	tokenFile   string
	thresholds  []string
	sets        []string
	subscribers string
	size        string
	junit       string
	prometheus  string
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
	fl.StringVar(&f.weights, "weights", "", "with --segment: the n segments' weights, like 1,3 (segment k gets w_k/Σw of the users)")
	fl.StringVar(&f.startAt, "start-at", "", "start at this time (RFC 3339, like 2026-11-21T15:04:05Z), so segments on several machines start together")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress line")
	fl.StringArrayVar(&f.processes, "server-process", nil, "read this server process and its children: NAME, PID or pidfile:PATH (repeatable)")
	fl.StringArrayVar(&f.nodes, "node-exporter", nil, "read a machine's counters from its node_exporter page URL (repeatable)")
	fl.StringSliceVar(&f.agents, "agents", nil, "run over these agents (host:port,...): agent k runs segment k/n; see `throng agent`")
	fl.DurationVar(&f.agentsWait, "agents-wait", 0, "with --agents: keep trying to reach agents that are not up yet for this long")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --agents: the file holding the shared token (or set THRONG_TOKEN)")
	fl.StringArrayVar(&f.sets, "set", nil, "give a scenario variable (vars:) a value: name=value (repeatable)")
	fl.StringVar(&f.subscribers, "subscribers", "", "shorthand for --set subscribers=N (pub/sub presets)")
	fl.StringVar(&f.size, "size", "", "shorthand for --set size=SIZE (message or file size of presets that declare it)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, `a pass/fail limit, like "p95 < 500ms" or "ramp-up: error_rate < 1%" (repeatable; exit code 1 when one fails)`)
	fl.StringVar(&f.junit, "junit", "", "write the thresholds' outcomes as JUnit XML to this file")
	fl.StringVar(&f.prometheus, "prometheus", "", "serve the live interval metrics for Prometheus at this address (like 127.0.0.1:9464) during the run")
	return cmd
}

// loadScenario finds a scenario by file path or preset name and decodes it.
// When the file decodes with problems, the scenario is returned with them
// (as scenario.Errors), so they can be reported with the validation's.
func loadScenario(arg string) (*scenario.Scenario, error) { return loadScenarioVars(arg, nil) }

// loadScenarioVars is loadScenario with values for the scenario's variables.
func loadScenarioVars(arg string, vars map[string]string) (*scenario.Scenario, error) {
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
	s, err := scenario.DecodeVars(file, src, familyNames(), vars)
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
	s          *scenario.Scenario
	thresholds []threshold.Threshold
	plan       *plan.Plan
	drv        driver.Config
	actions    []driver.Action
	kind       string
	threads    int    // event-loop threads asked for (0: automatic)
	target     string // shown in reports
	stop       func() error
}

// prepare applies the flags, validates, starts the embedded target when
// asked, decodes the driver's block, compiles the actions and chooses the
// engine. Every problem of the scenario is reported at once.
func prepare(s *scenario.Scenario, seg plan.Segment, decodeErrs []error) (*prepared, error) {
	errs := append(decodeErrs, s.Validate()...)
	ths, terrs := parseThresholds(s)
	errs = append(errs, terrs...)
	fam, err := familyByName(s.Driver)
	if err != nil {
		return nil, badInput(err)
	}
	pr := &prepared{s: s, thresholds: ths, threads: s.Engine.Threads, stop: func() error { return nil }}
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
	ovs := planOverrides(cmd, f)
	s, decodeErrs, given, err := loadWithOverrides(arg, "", nil, ovs)
	if err != nil {
		return err
	}
	if len(f.agents) > 0 {
		return runDistributed(s, decodeErrs, ovs, f, stdout, stderr)
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
		given["--start-at"] = f.startAt
	}
	if f.weights != "" {
		given["--weights"] = f.weights
	}
	if f.segment != "1/1" {
		given["--segment"] = f.segment
	}
	pr, err := prepare(s, seg, decodeErrs)
	if err != nil {
		return err
	}
	defer pr.stop()
	out := f.out
	if out == "" {
		out = defaultOut(s.Name)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if err := preflight(ctx, pr); err != nil {
		return err
	}
	counters, err := counterSources(s)
	if err != nil {
		return badInput(err)
	}
	interrupted := stopOnSignal(cancel, stderr)
	if !startAt.IsZero() {
		if err := waitUntil(ctx, startAt, stderr); err != nil {
			return &exitError{ExitInterrupted, err}
		}
	}
	meta := buildMeta(pr, given, seg)
	lv := newLive(stderr, pr.plan, s.Runs, f.quiet)
	onInterval := lv.interval
	if f.prometheus != "" {
		exp, stopExp, err := serveExporter(f.prometheus, stderr)
		if err != nil {
			return failure(err)
		}
		defer stopExp()
		onInterval = func(rep int, iv *result.Interval) {
			exp.Update(&meta, iv)
			lv.interval(rep, iv)
		}
	}
	run, rec, runErr := execute(ctx, pr, counters, meta, out, hooks{interval: onInterval, repetition: lv.repetition, warn: lv.warn})
	lv.done()
	return finishRun(run, rec, runErr, interrupted(), pr.thresholds, f.junit, stdout)
}

// defaultOut is the result file of a run given no --out.
func defaultOut(name string) string {
	return filepath.Join("results", fmt.Sprintf("%s-%s.json", name, time.Now().Format("20060102-150405")))
}

// preflight checks the target before anything runs, when the driver can.
func preflight(ctx context.Context, pr *prepared) error {
	if pf, ok := pr.drv.(preflighter); ok {
		if err := pf.Preflight(ctx); err != nil {
			return failure(fmt.Errorf("%w\n(is the server running? nothing was run)", err))
		}
	}
	return nil
}

// hooks are told about a run's progress.
type hooks struct {
	repetitionStart func(rep int, at time.Time)
	interval        func(rep int, iv *result.Interval)
	repetition      func(rep *result.Repetition)
	warn            func(msg string)
}

// execute runs a prepared plan, writing its journal and its result at out.
func execute(ctx context.Context, pr *prepared, counters *sampler.Sampler, meta result.Meta, out string, h hooks) (*result.Run, *runner.Record, error) {
	s := pr.s
	return runner.Run(ctx, runner.Config{
		Plan: pr.plan, Driver: pr.drv, Actions: pr.actions, Kind: pr.kind, Threads: pr.threads,
		Runs: s.Runs, Trim: s.Trim, Out: out, Meta: meta,
		OnInterval: h.interval, OnRepetition: h.repetition, OnRepetitionStart: h.repetitionStart,
		Counters: counters, Warn: h.warn,
		// A GOMAXPROCS the user set is kept as set.
		AutoProcs: os.Getenv("GOMAXPROCS") == "",
	})
}

// finishRun prints a run's summary (made from memory: it needs no file),
// checks its thresholds, says where the result and the journal went, and
// turns the run's end into an exit code. A result that could not be written
// where asked is a failure (exit 4) even when it was written elsewhere.
func finishRun(run *result.Run, rec *runner.Record, runErr error, interrupted bool, ths []threshold.Threshold, junit string, stdout io.Writer) error {
	if run == nil {
		return failure(runErr)
	}
	if err := report.Text(stdout, run); err != nil {
		return failure(err)
	}
	where, saveErr := describeRecord(rec)
	if runErr != nil {
		fmt.Fprintf(stdout, "\n%s\n", where)
		return failure(errors.Join(runErr, saveErr))
	}
	outs := threshold.EvaluateAll(run, ths)
	failed := threshold.Failures(outs)
	if len(outs) > 0 {
		fmt.Fprintf(stdout, "\nThresholds:\n")
		for _, o := range outs {
			mark := "pass"
			if !o.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(stdout, "  %s  %s: %s — %s\n", mark, o.Phase, o.Threshold.Text, o.Message)
		}
	}
	var junitErr error
	if junit != "" {
		junitErr = writeJUnit(junit, run, outs)
	}
	fmt.Fprintf(stdout, "\n%s\n", where)
	switch {
	case saveErr != nil || junitErr != nil:
		return failure(errors.Join(saveErr, junitErr))
	case failed > 0:
		return &exitError{ExitThresholds, fmt.Errorf("%d of %d thresholds failed", failed, len(outs))}
	case interrupted:
		return &exitError{ExitInterrupted, errors.New("interrupted; the partial result was written")}
	case run.Partial:
		return &exitError{ExitPartial, fmt.Errorf("partial result: %s", run.Reason)}
	}
	return nil
}

// planOverrides lists the command-line values that change the scenario, in
// order; repeatable flags appear once per value.
func planOverrides(cmd *cobra.Command, f *runFlags) []agent.Override {
	var ovs []agent.Override
	for _, o := range overrides {
		if cmd.Flags().Changed(o.flag) {
			ovs = append(ovs, agent.Override{Flag: "--" + o.flag, Value: *f.values[o.flag]})
		}
	}
	for _, p := range f.processes {
		ovs = append(ovs, agent.Override{Flag: "--server-process", Value: p})
	}
	for _, u := range f.nodes {
		ovs = append(ovs, agent.Override{Flag: "--node-exporter", Value: u})
	}
	for _, t := range f.thresholds {
		ovs = append(ovs, agent.Override{Flag: "--threshold", Value: t})
	}
	for _, v := range f.sets {
		ovs = append(ovs, agent.Override{Flag: "--set", Value: v})
	}
	if cmd.Flags().Changed("subscribers") {
		ovs = append(ovs, agent.Override{Flag: "--subscribers", Value: f.subscribers})
	}
	if cmd.Flags().Changed("size") {
		ovs = append(ovs, agent.Override{Flag: "--size", Value: f.size})
	}
	return ovs
}

// loadWithOverrides finds and decodes a scenario (a file or a preset, or,
// when src is given, that text under the name file) and applies the
// overrides. It returns the decoding problems apart, so they are reported
// with the validation's, and the overrides as given (flag -> value).
func loadWithOverrides(arg, file string, src []byte, ovs []agent.Override) (*scenario.Scenario, scenario.Errors, map[string]string, error) {
	// Variables first: every value of the file may use them. --rate sets the
	// variable "rate" when the scenario declares one (seed 001's presets),
	// else the open model's aggregate rate.
	vars := map[string]string{}
	rate := ""
	var rest []agent.Override
	for _, ov := range ovs {
		switch ov.Flag {
		case "--set":
			k, v, ok := strings.Cut(ov.Value, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, nil, nil, badInput(fmt.Errorf("--set %q: want name=value", ov.Value))
			}
			vars[strings.TrimSpace(k)] = v
		case "--subscribers":
			vars["subscribers"] = ov.Value
		case "--size":
			vars["size"] = ov.Value
		case "--rate":
			rate = ov.Value
			rest = append(rest, ov)
		default:
			rest = append(rest, ov)
		}
	}
	decode := func(vars map[string]string) (*scenario.Scenario, error) {
		if src != nil {
			s, err := scenario.DecodeVars(file, src, familyNames(), vars)
			if err != nil && s == nil {
				err = badInput(err)
			}
			return s, err
		}
		return loadScenarioVars(arg, vars)
	}
	s, err := decode(vars)
	if s != nil && rate != "" {
		if _, ok := s.Vars["rate"]; ok {
			vars["rate"] = rate
			s, err = decode(vars)
			rest = slices.DeleteFunc(rest, func(o agent.Override) bool { return o.Flag == "--rate" })
		}
	}
	ovs = rest
	var decodeErrs scenario.Errors
	if err != nil && !errors.As(err, &decodeErrs) {
		return nil, nil, nil, err
	}
	given := map[string]string{}
	for k, v := range vars {
		given["--set "+k] = v
	}
	lists := map[string]string{"--server-process": "counters.processes", "--node-exporter": "counters.node_exporter", "--threshold": "thresholds"}
	for _, ov := range ovs {
		if path, ok := lists[ov.Flag]; ok {
			s.Append(path, ov.Flag, ov.Value)
			given[ov.Flag] = strings.TrimPrefix(given[ov.Flag]+","+ov.Value, ",")
			continue
		}
		path := ""
		for _, o := range overrides {
			if "--"+o.flag == ov.Flag {
				path = o.path
			}
		}
		if path == "" {
			return nil, nil, nil, badInput(fmt.Errorf("%s is not a flag that overrides a scenario value", ov.Flag))
		}
		if err := s.Set(path, ov.Flag, ov.Value); err != nil {
			return nil, nil, nil, badInput(err)
		}
		given[ov.Flag] = ov.Value
	}
	// A count per user and a shared count exclude each other: the one given
	// on the command line replaces the scenario's other one.
	_, iters := given["--iterations"]
	_, total := given["--total"]
	if iters != total {
		other, flag := "closed.total", "--iterations"
		if total {
			other, flag = "closed.iterations", "--total"
		}
		if err := s.Set(other, flag, "0"); err != nil {
			return nil, nil, nil, badInput(err)
		}
	}
	return s, decodeErrs, given, nil
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
		Users: s.Users, Segment: seg.String(), SegmentUsers: len(p.Users), Seed: s.Seed, Speedup: s.Speedup,
		IntervalS: s.Interval.D().Seconds(), Iterations: s.Closed.Iterations, Total: s.Closed.Total, RatePerS: p.Rate,
		Engine: pr.kind, Threads: engine.LoopThreads(pr.kind, pr.threads, len(p.Users)),
		Runs: s.Runs, Trim: s.Trim, MaxDurationS: p.MaxDuration.Seconds(),
		Host: hostInfo(), Versions: result.Versions{Throng: version(), Go: runtime.Version()},
		Command: os.Args, StartedAt: time.Now(),
	}
	if s.Model != scenario.Closed {
		m.Iterations, m.Total = 0, 0
	}
	if d, ok := pr.drv.(driver.Describer); ok {
		m.Settings = d.Describe()
	}
	for _, a := range p.Actions {
		m.Actions = append(m.Actions, a.Name)
	}
	if ev, ok := pr.drv.(driver.Events); ok {
		m.Actions = append(m.Actions, ev.EventActions()...)
		m.Events = ev.EventActions()
	}
	if s.Grouped() {
		m.Model = "groups"
		for _, g := range p.Groups {
			gm := result.GroupMeta{Name: g.Name, Users: g.Users, Model: g.Model}
			for _, a := range p.Actions[g.First : g.First+g.N] {
				gm.Actions = append(gm.Actions, a.Name)
			}
			m.Groups = append(m.Groups, gm)
		}
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
