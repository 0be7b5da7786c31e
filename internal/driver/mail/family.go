package mail

import (
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
)

// Family is the mail family as the program wires it in: its block, its
// events, and the embedded IMAP and SMTP server (internal/targets/mail) for
// `target: embedded`. A target that can provision accounts (the embedded
// server: driver.Provisioner) becomes the Config's Provisioner, so Prepare
// creates the population's accounts and lists on it.
func Family() driver.Family {
	return driver.Family{
		Name:   Name,
		Events: (&Config{}).EventActions(),
		Decode: func(block scenario.Node, env driver.Env) (driver.Config, []error) {
			c, errs := Decode(block, env.Target.URL())
			if p, ok := env.Target.(driver.Provisioner); ok {
				c.Provisioner = p
			}
			return c, errs
		},
		Embedded: func(listen string) (driver.Target, error) {
			s, err := mailtarget.Start(listen)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	}
}
