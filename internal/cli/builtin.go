package cli

import (
	"context"
	"fmt"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/scenario"
	webtarget "github.com/throng-io/throng/internal/targets/web"
)

// family is one protocol family known to throng. This list is THE place
// where drivers and their embedded targets are wired in: adding a family is
// one entry here and one package under internal/driver.
type family struct {
	name string
	// decode reads the scenario's block for a target URL.
	decode func(block scenario.Node, target string) (driver.Config, []error)
	// serve starts the family's in-process reference server on listen
	// ("127.0.0.1:0" for a free port) and returns its URL and a stop function.
	serve func(listen string) (url string, stop func() error, err error)
}

var families = []family{
	{
		name: web.Name,
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			return web.Decode(block, target)
		},
		serve: func(listen string) (string, func() error, error) {
			s, err := webtarget.Start(listen)
			if err != nil {
				return "", nil, err
			}
			return s.URL(), s.Close, nil
		},
	},
}

// familyNames lists the families, the default (web) first.
func familyNames() []string {
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.name
	}
	return names
}

func familyByName(name string) (*family, error) {
	for i := range families {
		if families[i].name == name {
			return &families[i], nil
		}
	}
	return nil, fmt.Errorf("no protocol family %q (known: %v)", name, familyNames())
}

// preflighter is the optional driver ability of checking the target before
// the run (name resolves, connection accepted).
type preflighter interface {
	Preflight(ctx context.Context) error
}

// engineAvailable reports whether an engine kind can run here (for tests
// and messages): goroutines always can.
func engineAvailable(kind string) bool {
	if kind == "goroutines" {
		return true
	}
	return engine.Supported(kind) == nil
}
