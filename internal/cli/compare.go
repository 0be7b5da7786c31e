package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/compare"
)

func compareCommand(stdout, stderr io.Writer) *cobra.Command {
	var phase, format string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json [C.json ...]",
		Short: "Compare runs side by side: values, % change and whether a difference is more than noise",
		Long: `Compare runs (result files, or journals of interrupted runs) side by side.
Rows are measures, client side then server counters; columns are the runs,
named by their label. Each run after the first gets its % change against the
first and a verdict from a Mann-Whitney U test of the per-interval values
(or the per-repetition values when both runs have 3 or more repetitions):
better, worse, higher, lower, or "~ within noise" (p >= 0.05).

Warnings say what makes the runs hard to compare: different scenarios,
loads, speedups, models, machines or engines; client-bound intervals;
partial runs and what they miss.

The exit code is 0 whenever the runs could be compared, whatever the
differences; 2 for a bad flag, fewer than two files, or a file that is not
a result or a journal (the message names it, and the line in a journal);
4 when a file cannot be read.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return badInput(fmt.Errorf("compare needs at least two result files, got %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(args, phase, cmd.Flags().Changed("phase"), format, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&phase, "phase", "steady", "phase to compare: "+strings.Join(compare.Phases, ", ")+
		` (by default steady, or all when a run has no steady phase)`)
	fl.StringVar(&format, "format", "text", "output: "+strings.Join(compare.Formats, ", "))
	return cmd
}

func runCompare(paths []string, phase string, phaseGiven bool, format string, stdout, stderr io.Writer) error {
	if !slices.Contains(compare.Formats, format) {
		return badInput(fmt.Errorf("--format %q: want one of %s", format, strings.Join(compare.Formats, ", ")))
	}
	if !phaseGiven {
		phase = ""
	}
	if _, err := compare.NormalizePhase(phase); err != nil {
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
	c, err := compare.Compare(inputs, phase)
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
