package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/presets"
)

// Shell completion (`throng completion bash|zsh|fish|powershell`, cobra's
// own command) offers what the program knows: preset names where a
// scenario is asked for, and the values of enumerated flags.

// completeScenario offers the presets whose name starts with what was
// typed, and lets the shell add its file names (a scenario file).
func completeScenario(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	return withPrefix(presets.Names(), typed), cobra.ShellCompDirectiveDefault
}

// completePreset offers preset names only (presets show NAME).
func completePreset(_ *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(presets.Names(), typed), cobra.ShellCompDirectiveNoFileComp
}

// completeValues offers a fixed list of values for a flag.
func completeValues(values []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(values, typed), cobra.ShellCompDirectiveNoFileComp
	}
}

func withPrefix(names []string, typed string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, typed) {
			out = append(out, n)
		}
	}
	return out
}
