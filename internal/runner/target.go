package runner

import (
	"fmt"

	"github.com/throng-io/throng/internal/driver"
)

// Target is where jobs send their load: a server elsewhere, known by its
// URL, or a family's embedded server started in this process. One Target
// may serve many jobs, one after the other (a capacity search's steps
// against one warm server): give it in each Request, and close it after
// the last job. A job that starts its own (Request without a Target, and
// a scenario whose target is "embedded") closes it in Job.Close.
type Target struct {
	t        driver.Target
	family   string // the family whose embedded server it is; "" for a URL
	embedded bool
}

// URLTarget is a server elsewhere, known by its URL. Its family is the
// scenario's; closing it does nothing.
func URLTarget(url string) *Target { return &Target{t: driver.URLTarget(url)} }

// StartEmbedded starts a family's embedded server on listen ("127.0.0.1:0":
// a free port). The caller closes it.
func (p *Preparer) StartEmbedded(family, listen string) (*Target, error) {
	fam, err := p.Family(family)
	if err != nil {
		return nil, badInput(err)
	}
	return startEmbedded(fam, listen)
}

func startEmbedded(fam *driver.Family, listen string) (*Target, error) {
	if fam.Embedded == nil {
		return nil, badInput(fmt.Errorf("the %s family has no embedded server", fam.Name))
	}
	t, err := fam.Embedded(listen)
	if err != nil {
		return nil, unable(fmt.Errorf("starting the embedded %s server: %w", fam.Name, err))
	}
	return &Target{t: t, family: fam.Name, embedded: true}, nil
}

// resolveTarget gives j its target: the request's (the caller's to close),
// or the scenario's, an embedded server started now when it says
// "embedded" (then j closes it).
func (p *Preparer) resolveTarget(j *Job, fam *driver.Family, given *Target) error {
	switch {
	case given != nil:
		j.Target = given
	case j.Scenario.Target == "embedded":
		t, err := startEmbedded(fam, "127.0.0.1:0")
		if err != nil {
			return err
		}
		j.Target, j.ownsTarget = t, true
	default:
		j.Target = URLTarget(j.Scenario.Target)
	}
	return nil
}

// URL is the target's URL, as the family's driver reads it.
func (t *Target) URL() string { return t.t.URL() }

// Embedded reports whether the target is an embedded server in this
// process (it then shares the machine with the load).
func (t *Target) Embedded() bool { return t.embedded }

// String describes the target for reports: "embedded web server at URL",
// or the URL.
func (t *Target) String() string {
	if t.embedded {
		return "embedded " + t.family + " server at " + t.URL()
	}
	return t.URL()
}

// Close stops an embedded server; for a server elsewhere it does nothing.
func (t *Target) Close() error { return t.t.Close() }
