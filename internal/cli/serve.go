package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/runner"
)

// serveApps are applications of a family's embedded server that serve
// can be asked for by name: the server is the family's, the URL printed
// the application's.
var serveApps = map[string]struct{ family, path string }{
	"web-shop": {"web", "/shop/"},
}

func serveCommand(prep *runner.Preparer, stdout, stderr io.Writer) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve FAMILY",
		Short: "Run an embedded reference server on its own (families: web, files, mail, pubsub, nats, mqtt; web-shop)",
		Long: `Run the embedded reference server of a protocol family in this process until
Ctrl-C, so a benchmark can measure the generator's process and the server's
process apart, or a distributed test can put the server on its own host.
"throng run" with target "embedded" starts the same server in-process.
"web-shop" is the web server, named for its demo shop under /shop/ (the
web-shop preset's target).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, path := args[0], ""
			if app, ok := serveApps[name]; ok {
				name, path = app.family, app.path
			}
			fam, err := prep.Family(name)
			if err != nil {
				return badInput(err)
			}
			if fam.Embedded == nil {
				return badInput(fmt.Errorf("the %s family has no embedded server", fam.Name))
			}
			// Catch the signals before saying we serve: a caller may stop us
			// as soon as it reads that line.
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
			t, err := fam.Embedded(listen)
			if err != nil {
				return failure(fmt.Errorf("serve %s on %s: %w", fam.Name, listen, err))
			}
			if path != "" {
				// The target is the server: the application's paths hold its prefix.
				fmt.Fprintf(stdout, "serving %s at %s (under %s; pid %d); Ctrl-C to stop\n", args[0], t.URL(), path, os.Getpid())
			} else {
				fmt.Fprintf(stdout, "serving %s at %s (pid %d); Ctrl-C to stop\n", fam.Name, t.URL(), os.Getpid())
			}
			<-ch
			return t.Close()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on")
	return cmd
}
