package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/regfile"
	"github.com/throng-io/throng/internal/report"
	"github.com/throng-io/throng/internal/result"
)

func reportCommand(stdout io.Writer) *cobra.Command {
	var htmlPath, format string
	cmd := &cobra.Command{
		Use:   "report RESULT.json|JOURNAL.jsonl...",
		Short: "Print the summary of finished or interrupted runs",
		Long: `Print the summary of a run from its result file, or from its journal when the
run was cut short (killed, crashed): the journal holds every finished interval,
and the summary is then marked partial. Given a result path whose file is
missing, the journal beside it is read.

With --html, write one self-contained HTML page instead (it opens offline):
charts over time with the phases shaded, latency distributions and the
summary tables; several runs are overlaid on the same charts, and compared.
With --format markdown or csv, print the summary's tables alone, in that
format (the same tables as the text and the page).

Given a capacity search's record (throng capacity --out), print the search;
with --html, draw throughput and latency against the load with the SLOs'
limits, the capacity's 95% interval and the knee.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if capacity.IsRecordFile(args[0]) {
				return reportCapacity(args, htmlPath, stdout)
			}
			if !slices.Contains(report.Formats, format) {
				return badInput(fmt.Errorf("--format %q: want one of %s", format, strings.Join(report.Formats, ", ")))
			}
			if htmlPath != "" {
				return writeHTML(htmlPath, args, stdout)
			}
			for i, path := range args {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				run, err := readRun(path, stdout)
				if err != nil {
					return err
				}
				if err := report.Tables(stdout, run, format); err != nil {
					return failure(err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlPath, "html", "", "write an HTML report of the runs to this file (charts overlaid when several)")
	cmd.Flags().StringVar(&format, "format", "text", "output without --html: text (the summary), or its tables alone as markdown or csv")
	cmd.RegisterFlagCompletionFunc("format", completeValues(report.Formats))
	return cmd
}

// writeHTML reads the runs and writes their HTML report to path; the page is
// made in memory first, so a failure leaves the file as it was.
func writeHTML(path string, args []string, stdout io.Writer) error {
	// A FIFO would block the write, a directory refuse it at the end.
	var nr *regfile.NotRegularError
	if err := regfile.CheckOutput(path); errors.As(err, &nr) {
		return badInput(fmt.Errorf("--html %s: %w: a report cannot be written there", path, err))
	}
	runs := make([]*result.Run, 0, len(args))
	for _, a := range args {
		run, err := readRun(a, stdout)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	var page bytes.Buffer
	if err := report.HTML(&page, runs); err != nil {
		return failure(fmt.Errorf("cannot make the HTML report: %w", err))
	}
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return failure(fmt.Errorf("cannot write the HTML report: %w", err))
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fmt.Fprintf(stdout, "HTML report: %s\n", path)
	return nil
}

// readRun reads a result file, or the journal beside a missing one. A file
// that is not a result or a journal, or is damaged, is bad input (exit 2,
// the message names it, and the line for a journal); one that cannot be
// read is a failure (exit 4).
func readRun(path string, w io.Writer) (*result.Run, error) {
	run, err := result.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		jp := result.JournalPath(path)
		if _, jerr := os.Stat(jp); jerr == nil {
			fmt.Fprintf(w, "%s does not exist; reading its journal %s\n", path, jp)
			run, err = result.ReadFile(jp)
		}
	}
	var fe *result.FormatError
	switch {
	case err == nil:
		return run, nil
	case errors.As(err, &fe):
		return nil, badInput(err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, failure(fmt.Errorf("%s: no such result file or journal", path))
	}
	return nil, failure(err)
}

// reportCapacity prints capacity searches' records, or draws one as HTML.
func reportCapacity(args []string, htmlPath string, stdout io.Writer) error {
	if htmlPath != "" && len(args) > 1 {
		return badInput(fmt.Errorf("--html draws one capacity search; got %d files", len(args)))
	}
	for i, path := range args {
		rec, err := readCapacity(path)
		if err != nil {
			return err
		}
		if htmlPath != "" {
			var page bytes.Buffer
			if err := report.CapacityHTML(&page, rec); err != nil {
				return failure(fmt.Errorf("cannot make the HTML report: %w", err))
			}
			if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
				return failure(fmt.Errorf("cannot write the HTML report: %w", err))
			}
			fmt.Fprintf(stdout, "HTML report: %s\n", htmlPath)
			return nil
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := report.CapacityText(stdout, rec); err != nil {
			return failure(err)
		}
	}
	return nil
}

// readCapacity reads a capacity search's record: a file that is none, or
// is damaged, is bad input (exit 2, the message says where); one that
// cannot be read is a failure (exit 4).
func readCapacity(path string) (*capacity.Record, error) {
	if !capacity.IsRecordFile(path) {
		if _, err := os.Stat(path); err != nil {
			return nil, failure(err)
		}
		return nil, badInput(fmt.Errorf("%s: not a capacity search's record (schema %s)", path, capacity.RecordSchema))
	}
	rec, err := capacity.ReadRecordFile(path)
	var fe *result.FormatError
	switch {
	case err == nil:
		return rec, nil
	case errors.As(err, &fe):
		return nil, badInput(err)
	}
	return nil, failure(err)
}
