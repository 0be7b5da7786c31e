package cli

import (
	"context"
	"fmt"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/driver/pubsub"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
	pubsubtarget "github.com/throng-io/throng/internal/targets/pubsub"
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
	// events are the names of the driver's events (driver.Events), known
	// before its block is decoded: thresholds may name them (deliver.p99).
	events []string
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
	{
		name:   files.Name,
		events: []string{files.EventVerify},
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			return files.Decode(block, target)
		},
		// embedded: a temporary local directory, read through file://.
		serve: files.ServeEmbedded,
	},
	{
		name:   mail.Name,
		events: (&mail.Config{}).EventActions(),
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			c, errs := mail.Decode(block, target)
			// The embedded server in this process takes its accounts from
			// the driver (a real server gets them from testenv).
			if srv := mailtarget.Lookup(target); srv != nil {
				c.Provisioner = srv
			}
			return c, errs
		},
		serve: func(listen string) (string, func() error, error) {
			s, err := mailtarget.Start(listen)
			if err != nil {
				return "", nil, err
			}
			return s.URL(), s.Close, nil
		},
	},
	// pubsub: NATS and MQTT. Its embedded target is both brokers (NATS on
	// the port asked, MQTT on the next); the scenario's protocol (or the
	// target URL's scheme) picks one. The driver's counters (backlog per
	// interval, ...) join the run's counter sources.
	{
		name:   pubsub.Name,
		events: (&pubsub.Config{}).EventActions(),
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			c, errs := pubsub.Decode(block, target)
			offerSource(block, c.Source())
			return c, errs
		},
		serve: func(listen string) (string, func() error, error) {
			b, err := pubsubtarget.StartBoth(listen, pubsubtarget.Options{})
			if err != nil {
				return "", nil, err
			}
			return b.URL(), b.Close, nil
		},
	},
	// nats and mqtt: one broker each for `throng serve nats|mqtt`; their
	// blocks ("nats:", "mqtt:") are pubsub blocks with the protocol fixed.
	{
		name:   pubsub.NATS,
		events: (&pubsub.Config{}).EventActions(),
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			c, errs := pubsub.DecodeAs(block, target, pubsub.NATS)
			offerSource(block, c.Source())
			return c, errs
		},
		serve: func(listen string) (string, func() error, error) {
			n, err := pubsubtarget.StartNATS(listen, pubsubtarget.Options{})
			if err != nil {
				return "", nil, err
			}
			return n.URL(), n.Close, nil
		},
	},
	{
		name:   pubsub.MQTT,
		events: (&pubsub.Config{}).EventActions(),
		decode: func(block scenario.Node, target string) (driver.Config, []error) {
			c, errs := pubsub.DecodeAs(block, target, pubsub.MQTT)
			offerSource(block, c.Source())
			return c, errs
		},
		serve: func(listen string) (string, func() error, error) {
			m, err := pubsubtarget.StartMQTT(listen, pubsubtarget.Options{})
			if err != nil {
				return "", nil, err
			}
			return m.URL(), m.Close, nil
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
