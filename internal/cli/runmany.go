package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/threshold"
)

// config is one configuration of a multi-configuration run.
type config struct {
	arg    string
	label  string // unique among the configurations
	job    *runner.Job
	meta   result.Meta
	runs   int
	trim   int
	reps   []result.Repetition
	files  []string // each repetition's own result file, where its intervals are
	reason string   // why a repetition could not run
	out    string
}

// runMany runs several configurations (scenario files or presets, each
// with the same flags) alternately — A B C A B C … — one fresh repetition
// at a time, so that the machine's drift hits them alike, as careful
// benchmarks do. It writes one result per configuration and the
// comparison (text and JSON) in one directory, and prints the comparison.
// With --interleave=false each configuration runs all its repetitions
// before the next.
func runMany(cmd *cobra.Command, prep *runner.Preparer, args []string, f *runFlags, stdout, stderr io.Writer) error {
	if f.out == StdoutOut {
		return badInput(errors.New("-o - writes one result to stdout; with several scenarios --out names a directory"))
	}
	if len(f.agents) > 0 || f.segment != "1/1" || f.startAt != "" || f.prometheus != "" || f.junit != "" || len(f.outputs) > 0 {
		return badInput(errors.New("several configurations run on one machine: --agents, --segment, --start-at, --prometheus, --output and --junit take one scenario"))
	}
	settings, err := runSettings(cmd, f)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if err := checkRunFlags(f, true); err != nil {
		return err
	}
	// From here on a signal stops the runs cleanly, preparation included.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig, stopSignals := stopOnSignal(cancel, stderr)
	defer stopSignals()
	cfgs, err := prepareConfigs(ctx, prep, args, settings)
	defer func() {
		for _, c := range cfgs {
			c.job.Close()
		}
	}()
	if err != nil {
		return interruptedOr(sig(), err)
	}
	dir := f.out
	if dir == "" {
		var names []string
		for _, c := range cfgs {
			names = append(names, c.label)
		}
		dir = filepath.Join("results", fmt.Sprintf("%s-%s", strings.Join(names, "-vs-"), time.Now().Format("20060102-150405")))
	}
	if err := os.MkdirAll(filepath.Join(dir, "repetitions"), 0o755); err != nil {
		return failure(fmt.Errorf("cannot create the results directory: %w", err))
	}
	// One id for the configurations of this run: compare pairs their
	// repetitions by round.
	id := fmt.Sprintf("%s@%d", filepath.Base(dir), time.Now().UnixNano())
	for _, c := range cfgs {
		if err := c.job.Preflight(ctx); err != nil {
			return interruptedOr(sig(), fmt.Errorf("%s: %w", c.label, exitOf(err)))
		}
		// After the preflight: the settings the server negotiated with it
		// (SMB dialect, signing, encryption) are the driver's to report.
		c.meta = c.job.Meta()
		c.meta.Label = c.label
		if f.interleave {
			c.meta.Interleave = id
		}
		c.out = filepath.Join(dir, safeName(c.label)+".json")
	}
	order := schedule(cfgs, f.interleave)
	if !f.quiet {
		fmt.Fprintf(stderr, "throng: %d configurations, %d repetitions in this order: %s\n", len(cfgs), len(order), orderText(order))
	}
	for _, step := range order {
		if ctx.Err() != nil {
			break
		}
		if step.c.reason == "" {
			runStep(ctx, step, dir, f.quiet, stderr)
		}
	}
	failed, err := writeResults(cfgs, dir, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nResults: %s (one result per configuration, compare.txt, compare.json)\n", dir)
	partial := false
	for _, c := range cfgs {
		partial = partial || c.reason != "" || len(c.reps) < c.runs
	}
	switch {
	case failed > 0:
		return &exitError{ExitThresholds, fmt.Errorf("%d thresholds failed", failed)}
	case sig() != nil:
		return &exitError{signalExit(sig()), fmt.Errorf("stopped by %s; the partial results were written", signalName(sig()))}
	case partial:
		return &exitError{ExitPartial, errors.New("partial results: a configuration did not run all its repetitions")}
	}
	return nil
}

// prepareConfigs prepares each configuration with the same settings and
// gives each a label that tells it apart (the same file twice is an A/A
// comparison). The configurations prepared before an error are returned
// with it, to be closed.
func prepareConfigs(ctx context.Context, prep *runner.Preparer, args []string, settings []runner.Setting) ([]*config, error) {
	var cfgs []*config
	labels := map[string]int{}
	for _, arg := range args {
		src, err := readScenario(arg)
		if err != nil {
			return cfgs, fmt.Errorf("%s: %w", arg, err)
		}
		l, err := prep.Load(runner.Request{Source: src, Settings: settings})
		if err != nil {
			return cfgs, fmt.Errorf("%s: %w", arg, exitOf(err))
		}
		job, err := prep.PrepareLoaded(ctx, l)
		if err != nil {
			return cfgs, exitOf(err)
		}
		s := job.Scenario
		c := &config{arg: arg, job: job, runs: max(1, s.Runs), trim: s.Trim}
		cfgs = append(cfgs, c)
		c.label = s.Label
		if c.label == "" {
			c.label = s.Name
		}
		labels[c.label]++
	}
	seen := map[string]int{}
	for _, c := range cfgs {
		if labels[c.label] > 1 {
			seen[c.label]++
			c.label = fmt.Sprintf("%s-%d", c.label, seen[c.label])
		}
	}
	return cfgs, nil
}

// runStep runs one repetition of one configuration into its own result
// file under dir/repetitions, judged when all are in (assemble). A
// repetition that could not run or be written gives the configuration its
// reason, and its later repetitions are skipped.
func runStep(ctx context.Context, step step, dir string, quiet bool, stderr io.Writer) {
	c, r := step.c, step.rep
	lv := newLive(stderr, c.job.Plan, c.runs, quiet)
	if !quiet {
		fmt.Fprintf(stderr, "throng: %s, repetition %d of %d\n", c.label, r+1, c.runs)
	}
	meta := c.meta
	meta.Runs, meta.Trim = 1, 0
	tmp := filepath.Join(dir, "repetitions", fmt.Sprintf("%s-%d.json", safeName(c.label), r+1))
	cfg := c.job.Config(meta, tmp)
	cfg.Runs, cfg.Trim, cfg.Finish = 1, 0, nil
	cfg.OnInterval = func(_ int, iv *result.Interval) { lv.interval(r, iv) }
	run, rec, err := runner.Run(ctx, cfg)
	lv.done()
	if run == nil || len(run.Repetitions) == 0 {
		c.reason = fmt.Sprintf("repetition %d could not run: %v", r+1, err)
		return
	}
	if rec.Result == "" {
		c.reason = fmt.Sprintf("repetition %d could not be written: %v", r+1, rec.ResultErr)
		return
	}
	rep := run.Repetitions[0]
	rep.Index = r
	c.reps = append(c.reps, rep)
	c.files = append(c.files, rec.Result)
	if err != nil {
		c.reason = fmt.Sprintf("repetition %d: %v", r+1, err)
	}
}

// writeResults writes each configuration's result from its repetitions,
// then the comparison (compare.txt, compare.json) in dir, prints it, and
// returns how many thresholds failed.
func writeResults(cfgs []*config, dir string, stdout io.Writer) (failed int, err error) {
	var inputs []compare.Input
	for _, c := range cfgs {
		run := assemble(c)
		c.job.Finish(run)
		if err := result.WriteAt(c.out, run, &repetitionFiles{files: c.files}); err != nil {
			return 0, failure(fmt.Errorf("the result file %s could not be written: %w (the repetitions are in %s)", c.out, err, filepath.Join(dir, "repetitions")))
		}
		failed += threshold.Failures(threshold.EvaluateAll(run, c.job.Thresholds))
		inputs = append(inputs, compare.Input{Path: c.out, Run: run})
	}
	// Every repetition is in its configuration's result now.
	os.RemoveAll(filepath.Join(dir, "repetitions"))
	cmp, err := compare.Compare(inputs, compare.Options{})
	if err != nil {
		return 0, failure(err)
	}
	for _, format := range []string{"text", "json"} {
		name := map[string]string{"text": "compare.txt", "json": "compare.json"}[format]
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return 0, failure(err)
		}
		if err := errors.Join(compare.Render(fh, cmp, format), fh.Close()); err != nil {
			return 0, failure(err)
		}
	}
	if err := compare.Render(stdout, cmp, "text"); err != nil {
		return 0, failure(err)
	}
	return failed, nil
}

// step is one repetition of one configuration.
type step struct {
	c   *config
	rep int
}

// schedule orders the repetitions: round by round (A B C A B C …) when
// interleaved, else each configuration's in a row.
func schedule(cfgs []*config, interleave bool) []step {
	var out []step
	most := 0
	for _, c := range cfgs {
		most = max(most, c.runs)
	}
	if interleave {
		for r := 0; r < most; r++ {
			for _, c := range cfgs {
				if r < c.runs {
					out = append(out, step{c, r})
				}
			}
		}
		return out
	}
	for _, c := range cfgs {
		for r := 0; r < c.runs; r++ {
			out = append(out, step{c, r})
		}
	}
	return out
}

func orderText(order []step) string {
	var s []string
	for i, st := range order {
		if i == 12 {
			s = append(s, "…")
			break
		}
		s = append(s, st.c.label)
	}
	return strings.Join(s, " ")
}

// assemble makes a configuration's result from its repetitions, as the
// runner does for repetitions run in a row.
func assemble(c *config) *result.Run {
	meta := c.meta
	meta.Runs, meta.Trim = c.runs, c.trim
	run := &result.Run{Schema: result.Schema, Meta: meta, Repetitions: c.reps}
	full := 0
	var kept []result.Repetition
	for _, r := range c.reps {
		if !r.Partial {
			full++
			kept = append(kept, r)
		}
	}
	switch {
	case c.reason != "":
		run.Partial, run.Reason = true, c.reason
	case full < c.runs:
		run.Partial, run.Reason = true, fmt.Sprintf("%d of %d repetitions finished", full, c.runs)
	}
	if len(kept) > 1 {
		run.Aggregate = compare.Aggregate(kept, c.trim, c.job.Plan.CountBound)
	}
	return run
}

// safeName makes a label usable as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// repetitionFiles gives the intervals of a configuration's repetitions from
// each one's own result file: one repetition in memory at a time.
type repetitionFiles struct {
	files []string
	k     int
	run   *result.Run
	i     int
}

func (s *repetitionFiles) Next(k int, _ *result.Repetition) (*result.Interval, error) {
	if s.run == nil || k != s.k {
		run, err := result.ReadFile(s.files[k])
		if err != nil {
			return nil, err
		}
		if len(run.Repetitions) != 1 {
			return nil, fmt.Errorf("%s: %d repetitions, not 1", s.files[k], len(run.Repetitions))
		}
		s.run, s.k, s.i = run, k, 0
	}
	ivs := s.run.Repetitions[0].Intervals
	if s.i >= len(ivs) {
		return nil, nil
	}
	s.i++
	return &ivs[s.i-1], nil
}
