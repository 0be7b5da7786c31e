package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/report"
)

func compareCommand(stdout, stderr io.Writer) *cobra.Command {
	var phase, format, family string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json [C.json ...]",
		Short: "Compare runs side by side: values, differences with confidence intervals, verdicts",
		Long: `Compare runs (result files, or journals of interrupted runs) side by side.
Rows are measures of a phase (client, per action, delivery and loss, server
counters and costs); columns are the runs, named by their label. A run's
value is the trimmed mean of its repetitions (± their spread); each run
after the first gets its change against the first (Yuen's test over the
repetitions: the unit of replication is the run, never the interval) and a
verdict: better, worse (or higher, lower when neither is better), or "no
difference detectable", controlled over the whole comparison (--control)
so that identical configurations get no row called different at least 95%
of the time. Its confidence interval is at the level that agrees with the
verdicts (named in the header: 99.8% CI, ...): it excludes 0 exactly when
the row is called. With one repetition a side nothing can be judged: the
difference is shown, with the repetitions it would take.

Also: the configuration differences key by key, each run's validity
verdict and thresholds' outcomes, and warnings (different scenarios, loads,
speedups, models, machines or engines; client-bound intervals; partial or
invalid runs), each said once.

The exit code is 0 whenever the runs could be compared, whatever the
differences; 2 for a bad flag, fewer than two files, or a file that is not
a result or a journal (the message names it, and the line in a journal);
4 when a file cannot be read.

Given two capacity searches' records (throng capacity --out) of the same
question (SLOs and load dimension), it says how much more B carries than A at
the same SLO, with an interval from both searches' 95% intervals; searches of
different questions, or without a capacity, are refused as bad input (exit 2).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return badInput(fmt.Errorf("compare needs at least two result files, got %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if capacity.IsRecordFile(args[0]) || capacity.IsRecordFile(args[1]) {
				return compareCapacity(args, stdout)
			}
			return runCompare(args, phase, cmd.Flags().Changed("phase"), format, family, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&phase, "phase", "steady", "phases to compare, comma-separated: "+strings.Join(compare.Phases, ", ")+
		` (by default steady, or all when a run has no steady phase)`)
	fl.StringVar(&format, "format", "text", "output: "+strings.Join(compare.Formats, ", "))
	fl.StringVar(&family, "control", compare.FDR, "error control over the comparison's rows: fdr (Benjamini-Hochberg false discovery rate) or fwer (Holm family-wise error); both keep identical configurations free of any call 95% of the time")
	return cmd
}

func runCompare(paths []string, phase string, phaseGiven bool, format, family string, stdout, stderr io.Writer) error {
	if !slices.Contains(compare.Formats, format) {
		return badInput(fmt.Errorf("--format %q: want one of %s", format, strings.Join(compare.Formats, ", ")))
	}
	if !slices.Contains(compare.Families, family) {
		return badInput(fmt.Errorf("--control %q: want one of %s", family, strings.Join(compare.Families, ", ")))
	}
	if !phaseGiven {
		phase = ""
	}
	phases, err := compare.NormalizePhases(phase)
	if err != nil {
		return badInput(fmt.Errorf("--phase: %w", err))
	}
	inputs := make([]compare.Input, 0, len(paths))
	for _, p := range paths {
		run, err := readRun(p, stderr)
		if err != nil {
			return err
		}
		inputs = append(inputs, compare.Input{Path: p, Run: run})
	}
	c, err := compare.Compare(inputs, compare.Options{Phases: phases, Family: family})
	if err != nil {
		return badInput(err)
	}
	if format == "csv" {
		// CSV holds the rows only: the warnings go to stderr.
		for _, w := range c.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
	}
	if err := compare.Render(stdout, c, format); err != nil {
		return failure(err)
	}
	return nil
}

// compareCapacity compares two capacity searches: how much more B carries.
func compareCapacity(paths []string, stdout io.Writer) error {
	if len(paths) != 2 {
		return badInput(fmt.Errorf("compare takes two capacity searches, got %d files", len(paths)))
	}
	a, err := readCapacity(paths[0])
	if err != nil {
		return err
	}
	b, err := readCapacity(paths[1])
	if err != nil {
		return err
	}
	c, err := capacity.Compare(a, b)
	if err != nil {
		return badInput(fmt.Errorf("%s and %s: %w", paths[0], paths[1], err))
	}
	if err := report.CapacityCompare(stdout, &c); err != nil {
		return failure(err)
	}
	return nil
}
