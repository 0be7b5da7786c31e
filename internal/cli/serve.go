package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/targets/capacitytruth"
	"github.com/throng-io/throng/internal/textfmt"
)

func serveCommand(stdout, stderr io.Writer) *cobra.Command {
	var listen string
	var truth capacitytruth.Config
	cmd := &cobra.Command{
		Use:   "serve FAMILY",
		Short: "Run an embedded reference server on its own (families: web, files, mail, pubsub, nats, mqtt; and capacity-truth)",
		Long: `Run the embedded reference server of a protocol family in this process until
Ctrl-C, so a benchmark can measure the generator's process and the server's
process apart, or a distributed test can put the server on its own host.
"throng run" with target "embedded" starts the same server in-process.

"throng serve capacity-truth --workers W --service S [--exponential]" runs a
web server whose capacity is known exactly: W workers each hold a request
for S (exactly, or exponentially distributed with mean S), first come first
served, so it completes W/S requests per second whatever the machine — the
ground truth of the capacity search (docs/capacity.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			truthFlags := cmd.Flags().Changed("workers") || cmd.Flags().Changed("service") || cmd.Flags().Changed("exponential")
			var detail string
			var serve func(listen string) (string, func() error, error)
			if args[0] == capacityTruth {
				if truth.Workers < 1 || truth.Service <= 0 {
					return badInput(fmt.Errorf("serve capacity-truth: --workers must be 1 or more and --service a positive duration (got %d and %s)", truth.Workers, truth.Service))
				}
				detail = fmt.Sprintf("%d workers, each holding a request %s%s: capacity %s requests/s", truth.Workers, truth.Service,
					map[bool]string{true: " on average, exponentially", false: ""}[truth.Exponential],
					textfmt.Num(float64(truth.Workers)/truth.Service.Seconds()))
				serve = func(listen string) (string, func() error, error) {
					s, err := capacitytruth.Start(listen, truth)
					if err != nil {
						return "", nil, err
					}
					return s.URL(), s.Close, nil
				}
			} else {
				fam, err := familyByName(args[0])
				if err != nil {
					return badInput(fmt.Errorf("%w, or %s", err, capacityTruth))
				}
				if truthFlags {
					return badInput(fmt.Errorf("serve %s: --workers, --service and --exponential are for capacity-truth only", fam.name))
				}
				serve = fam.serve
			}
			// Catch the signals before saying we serve: a caller may stop us
			// as soon as it reads that line.
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
			url, stop, err := serve(listen)
			if err != nil {
				return failure(fmt.Errorf("serve %s on %s: %w", args[0], listen, err))
			}
			fmt.Fprintf(stdout, "serving %s at %s (pid %d); Ctrl-C to stop\n", args[0], url, os.Getpid())
			if detail != "" {
				fmt.Fprintf(stdout, "%s\n", detail)
			}
			<-ch
			return stop()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().IntVar(&truth.Workers, "workers", 4, "capacity-truth: workers, each holding one request at a time")
	cmd.Flags().DurationVar(&truth.Service, "service", 20*time.Millisecond, "capacity-truth: how long a worker holds a request")
	cmd.Flags().BoolVar(&truth.Exponential, "exponential", false, "capacity-truth: draw each hold from an exponential law of mean --service")
	return cmd
}

// capacityTruth names the capacity search's ground-truth server.
const capacityTruth = "capacity-truth"
