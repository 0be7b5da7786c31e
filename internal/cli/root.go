// Package cli is throng's command line: one file per sub-command. Flags
// stop here: a run's flags become settings by key path (runner.Setting),
// the runner prepares the job, and this package prints and chooses the
// exit code.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/buildinfo"
	"github.com/throng-io/throng/internal/runner"
)

// Main runs the throng command with its arguments and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return mainWith(args, stdout, stderr, newPreparer())
}

// mainWith is Main preparing runs with prep (tests give it other families).
func mainWith(args []string, stdout, stderr io.Writer, prep *runner.Preparer) int {
	root := &cobra.Command{
		Use:   "throng",
		Short: "Simulate a population of users against a real server and measure both sides",
		Long: `throng simulates users (web, mail, pub/sub and file-share clients) against a server,
measures what they experience (latency percentiles, throughput, errors) and
tells you when the load generator itself was the bottleneck.

  throng run web-static                 run a built-in preset against the embedded server
  throng run my.yaml --target URL       run a scenario file against your server
  throng presets                        list the presets; presets show NAME prints one
  throng report results/run.json        print the summary of a finished or cut run
  throng serve web --listen ADDR        run the embedded reference server on its own`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read().String(),
	}
	root.SetVersionTemplate("throng {{.Version}}\n")
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(versionCommand(stdout), runCommand(prep, stdout, stderr), reportCommand(stdout), compareCommand(stdout, stderr), presetsCommand(prep, stdout),
		serveCommand(prep, stdout, stderr), mergeCommand(stdout), agentCommand(prep, stderr), k8sCommand(prep, stdout),
		capacityCommand(prep, stdout, stderr))
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "throng:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors from cobra itself are about flags and arguments.
	return ExitBadInput
}
