package cli

import (
	"github.com/throng-io/throng/internal/buildinfo"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/driver/pubsub"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/runner"
)

// families lists the protocol families throng knows, the default (web)
// first. This list is THE place where drivers are wired in: adding a
// family is one package under internal/driver, whose Family says all the
// program needs to know (its block, events, embedded server, abilities),
// and one line here (CONTRIBUTING.md, "Adding a protocol family").
func families() []driver.Family {
	return []driver.Family{
		web.Family(),
		files.Family(),
		mail.Family(),
		pubsub.Family(),     // NATS or MQTT, by the block's protocol or the target's scheme
		pubsub.NATSFamily(), // "nats:" blocks and `throng serve nats`: one NATS broker
		pubsub.MQTTFamily(), // "mqtt:" blocks and `throng serve mqtt`: one MQTT broker
	}
}

// newPreparer is the runner's Preparer of this program: the families above
// and throng's version.
func newPreparer() *runner.Preparer {
	return &runner.Preparer{Families: families(), Version: buildinfo.Read().Version}
}

// engineAvailable reports whether an engine kind can run here (for tests
// and messages): goroutines always can.
func engineAvailable(kind string) bool {
	if kind == "goroutines" {
		return true
	}
	return engine.Supported(kind) == nil
}
