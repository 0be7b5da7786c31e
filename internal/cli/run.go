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
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

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
	interleave  bool // several configurations: alternate their repetitions
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

	// With --agents: plaintext, or the TLS fingerprints pinned.
	agentsInsecure bool
	agentPins      []string
	agentPinsFile  string
}

func runCommand(stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{values: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|PRESET [MORE.yaml ...]",
		Short: "Run a scenario file or a built-in preset",
		Long: `Run a scenario file or a built-in preset. Flags override the scenario's values.

While it runs, one line shows the progress. At the end a table summarizes each
phase. The journal (JSON Lines, flushed every interval) and the result file are
written under results/ unless --out says otherwise; Ctrl-C (exit 130) or SIGTERM
(exit 143) stops cleanly and still writes the result, marked partial.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return runMany(cmd, args, f, stdout, stderr)
			}
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
	fl.StringArrayVar(&f.agentPins, "agent-fingerprint", nil, "with --agents: accept only agents whose TLS certificate has this fingerprint (sha256:HEX, printed by throng agent; repeatable)")
	fl.StringVar(&f.agentPinsFile, "agent-fingerprints", "", "with --agents: a file of pinned fingerprints (one per line) or PEM certificates")
	fl.BoolVar(&f.agentsInsecure, "agents-insecure", false, "with --agents: talk to agents in plaintext (they run with --insecure)")
	fl.StringArrayVar(&f.sets, "set", nil, "give a scenario variable (vars:) a value: name=value (repeatable)")
	fl.StringVar(&f.subscribers, "subscribers", "", "shorthand for --set subscribers=N (pub/sub presets)")
	fl.StringVar(&f.size, "size", "", "shorthand for --set size=SIZE (message or file size of presets that declare it)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, `a pass/fail limit, like "p95 < 500ms" or "ramp-up: error_rate < 1%" (repeatable; exit code 1 when one fails)`)
	fl.StringVar(&f.junit, "junit", "", "write the thresholds' outcomes as JUnit XML to this file")
	fl.BoolVar(&f.interleave, "interleave", true, "with several scenarios: run their repetitions alternately, A B A B ... (false: all of A, then all of B)")
	fl.StringVar(&f.prometheus, "prometheus", "", "serve the live interval metrics for Prometheus at this address (like 127.0.0.1:9464) during the run")
	return cmd
}

// loadScenario finds a scenario by file path or preset name and decodes it.
// When the file decodes with problems, the scenario is returned with them
// (as scenario.Errors); when it is no scenario at all, only an error.
func loadScenario(arg string) (*scenario.Scenario, error) { return loadScenarioVars(arg, nil) }

// loadScenarioVars is loadScenario with values for the scenario's variables.
func loadScenarioVars(arg string, vars map[string]string) (*scenario.Scenario, error) {
	file, src, err := readScenario(arg)
	if err != nil {
		return nil, err
	}
	s, problems, err := decodeScenario(file, src, vars)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return s, problems
	}
	return s, nil
}

// readScenario finds a scenario by file path or preset name and returns
// its file name and text.
func readScenario(arg string) (file string, src []byte, err error) {
	_, statErr := os.Stat(arg)
	switch {
	case statErr == nil:
		b, err := scenario.ReadFile(arg)
		if err != nil {
			return "", nil, badInput(err)
		}
		return arg, b, nil
	case strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml"):
		return "", nil, badInput(fmt.Errorf("scenario file %s: %w", arg, statErr))
	}
	pf, b, ok := presets.Source(arg)
	if !ok {
		return "", nil, badInput(fmt.Errorf("no scenario file or preset named %q; `throng presets` lists the presets: %s",
			arg, strings.Join(presets.Names(), ", ")))
	}
	return pf, b, nil
}

// decodeScenario decodes a scenario's text with values for its variables.
// It returns either a scenario, with the problems found while decoding it
// (to be reported with the validation's), or, when the text is no scenario
// at all (a YAML syntax error, an empty file), an error and no scenario:
// never a nil scenario without an error.
func decodeScenario(file string, src []byte, vars map[string]string) (*scenario.Scenario, scenario.Errors, error) {
	s, err := scenario.DecodeVars(file, src, familyNames(), vars)
	if s == nil {
		if err == nil {
			err = fmt.Errorf("%s: no scenario could be read", file)
		}
		return nil, nil, badInput(err)
	}
	var problems scenario.Errors
	if err != nil && !errors.As(err, &problems) {
		return nil, nil, badInput(err)
	}
	return s, problems, nil
}

// loaded is a scenario read for a run, the command line's values applied.
// Its scenario is never nil: a text that is no scenario at all is an error
// of loadWithOverrides, never a loaded with problems.
type loaded struct {
	s        *scenario.Scenario
	problems scenario.Errors   // found while decoding, reported with the validation's
	given    map[string]string // the overrides as given (flag -> value)
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

// prepare validates a loaded scenario, refuses work that cannot be done,
// starts the embedded target when asked, decodes the driver's block,
// compiles the actions and the plan and chooses the engine. Every problem
// of the scenario is reported at once. It stops when ctx ends.
func prepare(ctx context.Context, l *loaded, seg plan.Segment) (*prepared, error) {
	return prepareWith(ctx, l, seg, func(fam *family) (string, func() error, error) { return fam.serve("127.0.0.1:0") })
}

// prepareWith is prepare with the function that starts a family's embedded
// server (tests check scenarios without starting any).
func prepareWith(ctx context.Context, l *loaded, seg plan.Segment, serve func(*family) (url string, stop func() error, err error)) (*prepared, error) {
	s := l.s
	errs := append(append([]error(nil), l.problems...), s.Validate()...)
	ths, terrs := parseThresholds(s)
	errs = append(errs, terrs...)
	fam, err := familyByName(s.Driver)
	if err != nil {
		return nil, badInput(err)
	}
	if len(errs) == 0 {
		if err := checkSchedule(s, seg); err != nil {
			return nil, err
		}
	}
	pr := &prepared{s: s, thresholds: ths, threads: s.Engine.Threads, stop: func() error { return nil }}
	target := s.Target
	if len(errs) == 0 && target == "embedded" {
		url, stop, err := serve(fam)
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
		errs = append(errs, placeErrors(s, derrs)...)
		pr.drv = drv
		if th, ok := drv.(driver.Thresholder); ok && len(derrs) == 0 {
			if pr.thresholds, err = threshold.WithDefaults(pr.thresholds, th.DefaultThresholds()); err != nil {
				return nil, failure(fmt.Errorf("the %s family: %w", fam.name, err))
			}
		}
		if len(derrs) == 0 {
			for _, a := range s.Actions {
				ca, aerrs := drv.Compile(a)
				errs = append(errs, placeErrors(s, aerrs)...)
				pr.actions = append(pr.actions, ca)
			}
		}
	}
	if len(errs) > 0 {
		pr.stop()
		scenario.SortErrors(errs)
		return nil, badInput(scenario.Errors(errs))
	}
	p, err := plan.CompileContext(ctx, s, seg)
	if err != nil {
		pr.stop()
		if ctx.Err() != nil {
			return nil, &exitError{ExitInterrupted, fmt.Errorf("stopped while compiling the plan: %w", err)}
		}
		return nil, badInput(err)
	}
	pr.plan = p
	kind, err := engine.Choose(s.Engine.Kind, pr.drv, pr.actions, p)
	if err != nil {
		pr.stop()
		return nil, badInput(s.Errorf("engine.kind", "%v", err))
	}
	if err := checkEngine(s, p, kind); err != nil {
		pr.stop()
		return nil, err
	}
	pr.kind = kind
	return pr, nil
}

// placeErrors gives a driver's errors that do not say where they are a
// place: those about the target go to the target key (or the --target
// flag), the others to the driver's block.
func placeErrors(s *scenario.Scenario, errs []error) []error {
	for i, err := range errs {
		var se *scenario.Error
		if errors.As(err, &se) {
			continue
		}
		path, msg := s.Driver, err.Error()
		if rest, ok := strings.CutPrefix(msg, "target "); ok {
			path, msg = "target", rest
		}
		errs[i] = s.Errorf(path, "%s", msg)
	}
	return errs
}

func runRun(cmd *cobra.Command, arg string, f *runFlags, stdout, stderr io.Writer) error {
	ovs := planOverrides(cmd, f)
	if len(f.agents) > 0 {
		l, err := loadWithOverrides(arg, "", nil, ovs)
		if err != nil {
			return err
		}
		return runDistributed(l, ovs, f, stdout, stderr)
	}
	l, seg, startAt, err := loadRun(arg, ovs, f.segment, f.weights, f.startAt)
	if err != nil {
		return err
	}
	s := l.s
	// From here on a signal stops the run cleanly: compiling a large
	// plan, checking the target and waiting for --start-at included.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig, stopSignals := stopOnSignal(cancel, stderr)
	defer stopSignals()
	pr, err := prepare(ctx, l, seg)
	if err != nil {
		return interruptedOr(sig(), err)
	}
	defer pr.stop()
	out := f.out
	if out == "" {
		out = defaultOut(s.Name)
	}
	if err := preflight(ctx, pr); err != nil {
		return interruptedOr(sig(), err)
	}
	counters, err := counterSources(s)
	if err != nil {
		return badInput(err)
	}
	if !startAt.IsZero() {
		if err := waitUntil(ctx, startAt, stderr); err != nil {
			return interruptedOr(sig(), err)
		}
	}
	meta := buildMeta(pr, l.given, seg)
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
	return finishRun(run, rec, runErr, sig(), pr.thresholds, f.junit, stdout)
}

// loadRun reads the scenario of a run and its command-line values: the
// overrides, --segment and --weights, --start-at (zero when not given).
func loadRun(arg string, ovs []agent.Override, segment, weights, startAt string) (*loaded, plan.Segment, time.Time, error) {
	var at time.Time
	l, err := loadWithOverrides(arg, "", nil, ovs)
	if err != nil {
		return nil, plan.Segment{}, at, err
	}
	seg, err := parseSegment(segment, weights)
	if err != nil {
		return nil, plan.Segment{}, at, badInput(err)
	}
	if startAt != "" {
		if at, err = time.Parse(time.RFC3339Nano, startAt); err != nil {
			return nil, plan.Segment{}, at, badInput(fmt.Errorf("--start-at %q: want a time like 2026-11-21T15:04:05Z", startAt))
		}
		l.given["--start-at"] = startAt
	}
	if weights != "" {
		l.given["--weights"] = weights
	}
	if segment != "1/1" {
		l.given["--segment"] = segment
	}
	return l, seg, at, nil
}

// defaultOut is the result file of a run given no --out: under results/,
// named after the scenario (see fileName) and the time.
func defaultOut(name string) string {
	return filepath.Join("results", fmt.Sprintf("%s-%s.json", fileName(name), time.Now().Format("20060102-150405")))
}

// fileName turns a scenario name into one file name component: letters,
// digits, '.', '_' and '-' are kept, any other run of characters (path
// separators, spaces, control characters) becomes one '-', leading dots
// and dashes are dropped (no hidden file, no "..", no option-like name),
// and the result is cut at 64 bytes; "run" when nothing is left. So
// "name: ../../x" writes results/x-TIME.json, never outside results/.
func fileName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-' {
			if b.Len()+utf8.RuneLen(r) > 64 {
				break
			}
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(strings.TrimLeft(b.String(), ".-"), "-")
	if out == "" {
		return "run"
	}
	return out
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
		Finish:    finishVerdicts(pr.thresholds),
	})
}

// finishRun prints a run's summary (made from memory: it needs no file),
// checks its thresholds, says where the result and the journal went, and
// turns the run's end into an exit code. A result that could not be written
// where asked is a failure (exit 4) even when it was written elsewhere.
func finishRun(run *result.Run, rec *runner.Record, runErr error, sig os.Signal, ths []threshold.Threshold, junit string, stdout io.Writer) error {
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
	// The summary printed the outcomes kept in the result.
	outs := threshold.EvaluateAll(run, ths)
	failed := threshold.Failures(outs)
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
	case sig != nil:
		return &exitError{signalExit(sig), fmt.Errorf("stopped by %s; the partial result was written", signalName(sig))}
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
// overrides. The file is read once, then decoded with the variables the
// overrides give.
func loadWithOverrides(arg, file string, src []byte, ovs []agent.Override) (*loaded, error) {
	// Variables first: every value of the file may use them. --rate sets the
	// variable "rate" when the scenario declares one (the iPush presets),
	// else the open model's aggregate rate.
	vars := map[string]string{}
	rate := ""
	var rest []agent.Override
	for _, ov := range ovs {
		switch ov.Flag {
		case "--set":
			k, v, ok := strings.Cut(ov.Value, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, badInput(fmt.Errorf("--set %q: want name=value", ov.Value))
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
	if src == nil {
		var err error
		if file, src, err = readScenario(arg); err != nil {
			return nil, err
		}
	}
	s, problems, err := decodeScenario(file, src, vars)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Vars["rate"]; ok && rate != "" {
		vars["rate"] = rate
		if s, problems, err = decodeScenario(file, src, vars); err != nil {
			return nil, err
		}
		rest = slices.DeleteFunc(rest, func(o agent.Override) bool { return o.Flag == "--rate" })
	}
	ovs = rest
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
			return nil, badInput(fmt.Errorf("%s is not a flag that overrides a scenario value", ov.Flag))
		}
		if err := s.Set(path, ov.Flag, ov.Value); err != nil {
			return nil, badInput(err)
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
			return nil, badInput(err)
		}
	}
	return &loaded{s: s, problems: problems, given: given}, nil
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
// the journal. It returns a function telling which signal came (nil when
// none did) and one that stops listening.
func stopOnSignal(cancel context.CancelCauseFunc, stderr io.Writer) (caught func() os.Signal, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Pointer[os.Signal]
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		got.Store(&sig)
		fmt.Fprintf(stderr, "\nthrong: %s: stopping; the result will be written (again to quit at once)\n", signalName(sig))
		cancel(fmt.Errorf("%w by %s", engine.ErrStopped, signalName(sig)))
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "throng: quitting now; the journal holds every finished interval")
		os.Exit(signalExit(sig))
	}()
	caught = func() os.Signal {
		if p := got.Load(); p != nil {
			return *p
		}
		return nil
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
	return caught, stop
}

// signalExit is the exit code of a run stopped by sig: 128 + its number,
// as a shell reports a process killed by it (130 SIGINT, 143 SIGTERM).
func signalExit(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// interruptedOr is err, or when a signal came, the exit of that signal: a
// run stopped before its load started (compiling, checking the target,
// waiting for --start-at) wrote nothing.
func interruptedOr(sig os.Signal, err error) error {
	if sig == nil {
		return err
	}
	return &exitError{signalExit(sig), fmt.Errorf("stopped by %s before the load started; nothing was written", signalName(sig))}
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
	m.RunID = runID(m, seg)
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
