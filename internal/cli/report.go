package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
)

func reportCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "report RESULT.json|JOURNAL.jsonl...",
		Short: "Print the summary of finished or interrupted runs",
		Long: `Print the summary of a run from its result file, or from its journal when the
run was cut short (killed, crashed): the journal holds every finished interval,
and the summary is then marked partial. Given a result path whose file is
missing, the journal beside it is read.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for i, path := range args {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				run, err := readRun(path, stdout)
				if err != nil {
					return err
				}
				if err := report.Text(stdout, run); err != nil {
					return failure(err)
				}
			}
			return nil
		},
	}
}

// readRun reads a result file, or the journal beside a missing one.
func readRun(path string, w io.Writer) (*result.Run, error) {
	run, err := result.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		jp := result.JournalPath(path)
		if _, jerr := os.Stat(jp); jerr == nil {
			fmt.Fprintf(w, "%s does not exist; reading its journal %s\n", path, jp)
			run, err = result.ReadFile(jp)
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, failure(fmt.Errorf("%s: no such result file or journal", path))
		}
		return nil, failure(err)
	}
	return run, nil
}
