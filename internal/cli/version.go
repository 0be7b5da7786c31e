package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/buildinfo"
)

// versionCommand prints which build this is: the same line as --version,
// then each field on its own line for scripts.
func versionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print throng's version, commit, build date and Go release",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := buildinfo.Read()
			fmt.Fprintf(stdout, "throng %s\n", in)
			commit := in.Commit
			if commit == "" {
				commit = "unknown"
			} else if in.Modified {
				commit += " (modified)"
			}
			date := in.Date
			if date == "" {
				date = "unknown"
			}
			fmt.Fprintf(stdout, "version: %s\ncommit:  %s\ndate:    %s\ngo:      %s\n", in.Version, commit, date, in.Go)
			return nil
		},
	}
}
