package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/targets/capacitytruth"
	"github.com/throng-io/throng/internal/textfmt"
)

// serveApps are applications of a family's embedded server that serve
// can be asked for by name: the server is the family's, the URL printed
// the application's.
var serveApps = map[string]struct{ family, path string }{
	"web-shop": {"web", "/shop/"},
}

// capacityTruth names the capacity search's ground-truth server.
const capacityTruth = "capacity-truth"

func serveCommand(prep *runner.Preparer, stdout, stderr io.Writer) *cobra.Command {
	var listen string
	var truth capacitytruth.Config
	cmd := &cobra.Command{
		Use:   "serve FAMILY",
		Short: "Run an embedded reference server on its own (families: web, files, mail, pubsub, nats, mqtt; web-shop; capacity-truth)",
		Long: `Run the embedded reference server of a protocol family in this process until
Ctrl-C, so a benchmark can measure the generator's process and the server's
process apart, or a distributed test can put the server on its own host.
"throng run" with target "embedded" starts the same server in-process.
"web-shop" is the web server, named for its demo shop under /shop/ (the
web-shop preset's target).

"throng serve capacity-truth --workers W --service S [--exponential]" runs a
web server whose capacity is known exactly: W workers each hold a request
for S (exactly, or exponentially distributed with mean S), first come first
served, so it completes W/S requests per second whatever the machine — the
ground truth of the capacity search (docs/capacity.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			truthFlags := cmd.Flags().Changed("workers") || cmd.Flags().Changed("service") || cmd.Flags().Changed("exponential")
			// serve starts the server; heading names it, under is an
			// application's path prefix, detail a line more.
			var serve func(listen string) (url string, stop func() error, err error)
			var heading, under, detail string
			if args[0] == capacityTruth {
				if truth.Workers < 1 || truth.Service <= 0 {
					return badInput(fmt.Errorf("serve capacity-truth: --workers must be 1 or more and --service a positive duration (got %d and %s)", truth.Workers, truth.Service))
				}
				heading = capacityTruth
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
				name := args[0]
				if app, ok := serveApps[name]; ok {
					name, under = app.family, app.path
				}
				fam, err := prep.Family(name)
				if err != nil {
					return badInput(fmt.Errorf("%w, or %s", err, capacityTruth))
				}
				if fam.Embedded == nil {
					return badInput(fmt.Errorf("the %s family has no embedded server", fam.Name))
				}
				if truthFlags {
					return badInput(fmt.Errorf("serve %s: --workers, --service and --exponential are for capacity-truth only", fam.Name))
				}
				heading = fam.Name
				if under != "" {
					heading = args[0]
				}
				serve = func(listen string) (string, func() error, error) {
					t, err := fam.Embedded(listen)
					if err != nil {
						return "", nil, err
					}
					return t.URL(), t.Close, nil
				}
			}
			// Catch the signals before saying we serve: a caller may stop us
			// as soon as it reads that line.
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
			url, stop, err := serve(listen)
			if err != nil {
				return failure(fmt.Errorf("serve %s on %s: %w", heading, listen, err))
			}
			if under != "" {
				// The target is the server: the application's paths hold its prefix.
				fmt.Fprintf(stdout, "serving %s at %s (under %s; pid %d); Ctrl-C to stop\n", heading, url, under, os.Getpid())
			} else {
				fmt.Fprintf(stdout, "serving %s at %s (pid %d); Ctrl-C to stop\n", heading, url, os.Getpid())
			}
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
