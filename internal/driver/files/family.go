package files

import (
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// Family is the files family as the program wires it in: its block, its
// events (read-back, connect), a temporary local directory for `target: embedded`, and
// the file:// scheme, whose targets are local paths without a host.
func Family() driver.Family {
	return driver.Family{
		Name:   Name,
		Events: []string{EventVerify, EventConnect},
		Decode: func(block scenario.Node, env driver.Env) (driver.Config, []error) {
			return Decode(block, env.Target.URL())
		},
		Embedded:     Embedded,
		LocalSchemes: []string{"file"},
	}
}
