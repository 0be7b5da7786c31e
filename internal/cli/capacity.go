package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
)

// capacityOverrides are the run flags a capacity search passes on to its
// steps (the load and the steady phase are the search's).
var capacityOverrides = []string{"target", "seed", "label", "interval", "engine", "threads"}

type capacityFlags struct {
	opts      runner.SearchOptions
	precision string
	budget    string
	out       string
	quiet     bool
	noSettle  bool
	values    map[string]*string
	sets      []string
	processes []string
	nodes     []string
	weights   string
	agentFlags
}

func capacityCommand(prep *runner.Preparer, stdout, stderr io.Writer) *cobra.Command {
	f := &capacityFlags{values: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "capacity SCENARIO.yaml|PRESET --slo LIMIT [--slo LIMIT ...]",
		Short: "Find the most load a server carries within its SLOs, with a 95% interval",
		Long: `Find the highest load (users, arrival rate, speedup or a scenario variable) at
which every SLO holds: a warm-up, then the load grows geometrically until an SLO
fails, then bisection, each step a short run whose validity is checked (the
generator not the bottleneck, steady, enough samples), repeated or lengthened
when it is not clear-cut. The server stays up and warm between steps.

It prints a line per step, then the capacity with its 95% confidence interval
and the resource that gave out first, the table of steps, a Universal
Scalability Law fit, the knee and the costs per unit of load. --out writes the
whole search (schema throng.capacity/1); throng report prints it again.

Exit codes: 0 found (or every SLO holds at --max), 1 an SLO fails already at
--min, 2 bad input, 3 no answer to the precision asked (the budget ran out,
the figures stayed too noisy, or the generator saturated first: the best
bracket is reported), 4 could not run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCapacity(cmd, prep, args[0], f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.opts.SLOs, "slo", nil, `a limit that must hold, in the threshold grammar, like "p95 < 1s" or "error_rate < 0.1%" (repeatable; at least one)`)
	fl.StringVar(&f.opts.Vary, "vary", "", "the load to vary: users, rate, speedup or a scenario variable (default: rate for an open model, users otherwise)")
	fl.Float64Var(&f.opts.Min, "min", 0, "the lowest load tried (default: a quarter of the scenario's own)")
	fl.Float64Var(&f.opts.Max, "max", 0, "the highest load tried (default: 64 times the scenario's own)")
	fl.DurationVar(&f.opts.StepDuration, "step-duration", capacity.DefaultStep, "the measured (steady) length of a step; a step that is not clear-cut runs longer, up to 4 times")
	fl.DurationVar(&f.opts.WarmUp, "warm-up", 0, "the warm-up step's length (default: --step-duration)")
	fl.BoolVar(&f.opts.NoWarmUp, "no-warm-up", false, "skip the warm-up step (the server is warm already)")
	fl.BoolVar(&f.noSettle, "no-settle", false, "do not wait, between steps, for the --server-process to settle (its CPU back near idle)")
	fl.StringVar(&f.precision, "precision", "5%", "the half-width asked of the capacity's 95% interval, like 5% or 0.05")
	fl.StringVar(&f.budget, "budget", "", fmt.Sprintf("the most steps and/or wall time (the whole search's, its waits for the server included), like 12, 10m or 12,10m (default %d steps, no time limit)", capacity.DefaultMaxSteps))
	fl.StringVarP(&f.out, "out", "o", "", "write the search (throng.capacity/1, every step's run) to this file, after each step and at the end; - writes it to stdout at the end (the text then goes to stderr)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no line per step")
	for _, name := range capacityOverrides {
		for _, o := range overrides {
			if o.flag == name {
				v := new(string)
				f.values[name] = v
				fl.Var(textFlag{v, o.typ}, o.flag, o.help)
			}
		}
	}
	fl.StringArrayVar(&f.sets, "set", nil, "give a scenario variable (vars:) a value: name=value (repeatable)")
	fl.StringArrayVar(&f.processes, "server-process", nil, "read this server process and its children: NAME, PID or pidfile:PATH (repeatable); the first limit and the costs need the server's CPU")
	fl.StringArrayVar(&f.nodes, "node-exporter", nil, "read a machine's counters from its node_exporter page URL (repeatable)")
	f.agentFlags.register(fl, "run every step over these agents (host:port,...), each step one distributed run merged as throng run --agents merges it; see throng agent")
	fl.StringVar(&f.weights, "weights", "", "with --agents: the agents' weights, like 1,3 (agent k gets w_k/Σw of each step's users and arrivals)")
	return cmd
}

func runCapacity(cmd *cobra.Command, prep *runner.Preparer, arg string, f *capacityFlags, stdout, stderr io.Writer) error {
	opts := f.opts
	var err error
	if opts.Precision, err = parsePrecision(f.precision); err != nil {
		return badInput(err)
	}
	if opts.MaxSteps, opts.MaxTime, err = parseBudget(f.budget); err != nil {
		return badInput(err)
	}
	if cmd.Flags().Changed("no-warm-up") && cmd.Flags().Changed("warm-up") {
		return badInput(errors.New("--warm-up and --no-warm-up exclude each other"))
	}
	if err := f.agentFlags.check(); err != nil {
		return err
	}
	if f.weights != "" && len(f.agents) == 0 {
		return badInput(errors.New("--weights shares each step among agents: give --agents too"))
	}
	src, err := readScenario(arg)
	if err != nil {
		return err
	}
	var settings []runner.Setting
	add := func(key, value, flag string) {
		settings = append(settings, runner.Setting{Key: key, Value: value, From: "flag " + flag})
	}
	for _, o := range overrides {
		if v, ok := f.values[o.flag]; ok && cmd.Flags().Changed(o.flag) {
			add(o.path, *v, "--"+o.flag)
		}
	}
	for _, v := range f.sets {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return badInput(fmt.Errorf("--set %q: want name=value", v))
		}
		add("vars."+strings.TrimSpace(k), val, "--set")
	}
	for _, p := range f.processes {
		add("counters.processes", p, "--server-process")
	}
	for _, u := range f.nodes {
		add("counters.node_exporter", u, "--node-exporter")
	}
	search, err := prep.NewSearch(runner.Request{Source: src, Settings: settings}, opts)
	if err != nil {
		return exitOf(err)
	}
	if len(f.agents) > 0 {
		end, err := distributeSearch(prep, search, f, stderr)
		if err != nil {
			return err
		}
		defer end()
	}
	dir, err := os.MkdirTemp("", "throng-capacity-")
	if err != nil {
		return failure(err)
	}
	defer os.RemoveAll(dir)
	search.Dir = dir
	text, file := stdout, f.out
	if f.out == StdoutOut {
		text, file = stderr, ""
	}
	var writeErr error
	search.NoSettle = f.noSettle
	search.OnStep = func(n int, rec *capacity.Record) {
		if !f.quiet {
			fmt.Fprintln(stderr, report.CapacityLine(&rec.Config, n, &rec.Steps[n-1]))
		}
		if file != "" {
			writeErr = capacity.WriteRecordFile(file, rec)
		}
	}
	search.Warn = func(msg string) { fmt.Fprintln(stderr, "throng:", msg) }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig, stopSignals := stopOnSignal(cancel, stderr)
	defer stopSignals()
	rec, runErr := search.Run(ctx)
	if rec == nil {
		return interruptedOr(sig(), exitOf(runErr))
	}
	if runErr != nil && len(rec.Steps) == 0 {
		return interruptedOr(sig(), exitOf(runErr))
	}
	if err := report.CapacityText(text, rec); err != nil {
		return failure(err)
	}
	switch {
	case f.out == StdoutOut:
		writeErr = capacity.WriteRecord(stdout, rec)
	case file != "":
		if writeErr = capacity.WriteRecordFile(file, rec); writeErr == nil {
			fmt.Fprintf(text, "\nsearch written to %s\n", file)
		}
	}
	switch {
	case sig() != nil:
		return &exitError{signalExit(sig()), fmt.Errorf("stopped by %s after %d steps; the best bracket so far is above", signalName(sig()), len(rec.Steps))}
	case runErr != nil:
		return exitOf(runErr)
	case writeErr != nil:
		return failure(fmt.Errorf("cannot write the search to %s: %w", f.out, writeErr))
	}
	return capacityExit(rec.Status)
}

// distributeSearch makes every step of a search a distributed run over the
// agents the flags name, with the controller of throng run --agents, in
// one session per agent for the whole search (agent.Session, opened at
// the first use: a costly data set prepared once, then every step, each
// with a fresh run id). end closes the session. Bad input (an embedded
// target, weights that do not match, no token) has exit 2, before any
// step.
func distributeSearch(prep *runner.Preparer, search *runner.Search, f *capacityFlags, stderr io.Writer) (end func(), err error) {
	l, err := prep.Load(search.Request)
	if err != nil {
		return nil, exitOf(err)
	}
	c, err := f.agentFlags.controller(l.Scenario, f.weights, stderr)
	if err != nil {
		return nil, err
	}
	s := l.Scenario
	search.Agents = f.agents
	c.Log = &onceWriter{w: stderr, seen: map[string]bool{}}
	var sess *agent.Session
	open := func(ctx context.Context) (*agent.Session, error) {
		if sess == nil {
			ss, err := c.Open(ctx)
			if err != nil {
				return nil, err
			}
			sess = ss
		}
		return sess, nil
	}
	search.Distribute = func(ctx context.Context, req runner.Request, keep bool) (*result.Run, error) {
		ss, err := open(ctx)
		if err != nil {
			return nil, err
		}
		p := planRequest(s, req.Settings, runner.NewRunID())
		p.KeepPopulation = keep
		return ss.Run(ctx, p)
	}
	search.DistributePopulation = func(ctx context.Context, req runner.Request) ([]driver.Preparation, error) {
		ss, err := open(ctx)
		if err != nil {
			return nil, err
		}
		infos, err := ss.PreparePopulation(ctx, planRequest(s, req.Settings, runner.NewRunID()))
		var out []driver.Preparation
		for _, in := range infos {
			out = append(out, driver.Preparation{Users: in.Users, Items: in.Items, Bytes: in.Bytes,
				Elapsed: time.Duration(in.ElapsedS * float64(time.Second)), Method: in.Method})
		}
		return out, err
	}
	return func() {
		if sess != nil {
			sess.Close()
		}
	}, nil
}

// onceWriter writes each distinct line (one Write) once: the controller's
// lines that every step would repeat (an agent's certificate) are said at
// the first step only.
type onceWriter struct {
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
}

func (o *onceWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[string(p)] {
		return len(p), nil
	}
	o.seen[string(p)] = true
	return o.w.Write(p)
}

// capacityExit maps how a search ended to the command's exit code.
func capacityExit(st capacity.Status) error {
	switch st {
	case capacity.Found, capacity.AboveMax:
		return nil
	case capacity.FailsAtMin:
		return &exitError{ExitThresholds, errors.New("an SLO fails already at --min: lower it")}
	case capacity.CouldNotRun, capacity.Unmeasurable:
		return failure(fmt.Errorf("no capacity: the search ended %s", st))
	}
	return &exitError{ExitPartial, fmt.Errorf("no capacity to the precision asked: the search ended %s (the best bracket is above)", st)}
}

// parsePrecision reads --precision: "5%", "±5%" or a fraction "0.05".
func parsePrecision(s string) (float64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "±")
	pct := strings.HasSuffix(t, "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("--precision %q: want a share like 5%% or 0.05", s)
	}
	if pct {
		x /= 100
	}
	return x, nil
}

// parseBudget reads --budget: a number of steps, a wall time, or both,
// comma-separated ("12", "10m", "12,10m"); "" keeps the defaults.
func parseBudget(s string) (steps int, d time.Duration, err error) {
	if strings.TrimSpace(s) == "" {
		return 0, 0, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if n, err := strconv.Atoi(part); err == nil && steps == 0 && n > 0 {
			steps = n
			continue
		}
		if x, err := time.ParseDuration(part); err == nil && d == 0 && x > 0 {
			d = x
			continue
		}
		return 0, 0, fmt.Errorf("--budget %q: want steps, a wall time or both, like 12, 10m or 12,10m (%q is neither, or given twice)", s, part)
	}
	return steps, d, nil
}
