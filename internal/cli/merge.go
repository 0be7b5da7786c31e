package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
)

func mergeCommand(stdout io.Writer) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge PART.json... -o MERGED.json",
		Short: "Merge the results of the segments of one plan (runs with --segment k/n)",
		Long: `Merge the results of n processes that each ran one segment of the same plan
(throng run SCENARIO --segment k/n --start-at TIME on n machines) into the result of
the whole plan. Counts and histograms are added exactly, interval by interval;
each generator's own figures (CPU, client-bound intervals, start skew) are kept
per agent. A part may be a result file or the journal of a cut run. A missing
segment or a partial part makes the merged result partial, saying which.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var parts []agent.Part
			for _, path := range args {
				run, err := readRun(path, io.Discard)
				if err != nil {
					return err
				}
				parts = append(parts, agent.Part{Name: agent.PartName(path), Run: run})
			}
			merged, err := agent.Merge(parts)
			if err != nil {
				return badInput(err)
			}
			if out == "" {
				return badInput(errors.New("say where to write the merged result: -o FILE"))
			}
			if err := result.WriteFile(out, merged); err != nil {
				return failure(fmt.Errorf("cannot write the merged result: %w", err))
			}
			if err := report.Text(stdout, merged); err != nil {
				return failure(err)
			}
			fmt.Fprintf(stdout, "\nMerged %d parts into %s\n", len(parts), out)
			if merged.Partial {
				return &exitError{ExitPartial, fmt.Errorf("partial: %s", merged.Reason)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "merged result file")
	return cmd
}
