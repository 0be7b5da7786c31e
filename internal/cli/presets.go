package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/presets"
)

func presetsCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the built-in presets; `presets show NAME` prints one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range presets.Names() {
				file, src, _ := presets.Source(name)
				desc := ""
				if s, err := scenario.Decode(file, src, familyNames()); err == nil {
					desc = strings.Join(strings.Fields(s.Description), " ")
				}
				fmt.Fprintf(stdout, "%-14s %s\n", name, desc)
			}
			fmt.Fprintln(stdout, "\nthrong presets show NAME prints one; throng run NAME runs it.")
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a preset's scenario file, to copy and edit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, src, ok := presets.Source(args[0])
			if !ok {
				return badInput(fmt.Errorf("no preset named %q; the presets are: %s", args[0], strings.Join(presets.Names(), ", ")))
			}
			_, err := stdout.Write(src)
			return err
		},
	})
	return cmd
}
