package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/presets"
)

func presetsCommand(prep *runner.Preparer, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the built-in presets; `presets show NAME` prints one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range presets.Names() {
				writePreset(stdout, prep, name)
			}
			fmt.Fprintln(stdout, "throng presets show NAME prints one; throng run NAME runs it. Scale a preset with")
			fmt.Fprintln(stdout, "--set NAME=VALUE (its vars) and the flags --users, --duration, --iterations,")
			fmt.Fprintln(stdout, "--rate, --speedup, --subscribers, --size (see throng run --help).")
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:               "show NAME",
		Short:             "Print a preset's scenario file, to copy and edit",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePreset,
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

// writePreset lists one preset: its description (the study it
// reproduces), what its default runs, the command of the study's full
// scale, and its variables with their defaults.
func writePreset(w io.Writer, prep *runner.Preparer, name string) {
	file, src, _ := presets.Source(name)
	s, err := scenario.Decode(file, src, prep.Names())
	if err != nil {
		fmt.Fprintf(w, "%s\n  (does not decode: %v)\n\n", name, err)
		return
	}
	fmt.Fprintln(w, name)
	wrap(w, strings.Join(strings.Fields(s.Description), " "))
	if d := presets.Header(name, "Default"); d != "" {
		wrap(w, "Default: "+d)
	}
	if fs := presets.FullScale(name); fs != "" {
		fmt.Fprintf(w, "  Full scale: %s\n", fs) // a command: never wrapped
	}
	if len(s.Vars) > 0 {
		names := make([]string, 0, len(s.Vars))
		for k := range s.Vars {
			names = append(names, k)
		}
		sort.Strings(names)
		vars := make([]string, len(names))
		for i, k := range names {
			v := s.Vars[k]
			if v == "" {
				v = `""`
			}
			vars[i] = k + "=" + v
		}
		wrap(w, "Vars: "+strings.Join(vars, " "))
	}
	fmt.Fprintln(w)
}

// wrap writes text indented by two spaces, in lines of at most 78
// columns (a longer word gets a line of its own).
func wrap(w io.Writer, text string) {
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && 2+len(line)+1+len(word) > 78 {
			fmt.Fprintf(w, "  %s\n", line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
