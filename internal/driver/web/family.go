package web

import (
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	webtarget "github.com/throng-io/throng/internal/targets/web"
)

// Family is the web family as the program wires it in: its block, the
// program's version in the default User-Agent, and the embedded HTTP
// server (internal/targets/web) for `target: embedded`.
func Family() driver.Family {
	return driver.Family{
		Name: Name,
		Decode: func(block scenario.Node, env driver.Env) (driver.Config, []error) {
			c, errs := Decode(block, env.Target.URL())
			c.SetVersion(env.Version)
			return c, errs
		},
		Embedded: func(listen string) (driver.Target, error) {
			s, err := webtarget.Start(listen)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	}
}
