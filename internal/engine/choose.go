package engine

import (
	"fmt"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// Choose resolves the scenario's engine kind for a driver and plan. "auto"
// picks io_uring when the event loops can serve the workload and the kernel
// allows it, epoll when only epoll works, and goroutines otherwise. A kind
// asked for explicitly that cannot serve the workload is an error saying why.
func Choose(kind string, cfg driver.Config, actions []driver.Action, p *plan.Plan) (string, error) {
	why := loopsUnfit(cfg, actions, p)
	switch kind {
	case scenario.EngineGoroutines:
		return kind, nil
	case scenario.EngineIOUring, scenario.EngineEpoll:
		if why != "" {
			return "", fmt.Errorf("engine %s cannot run this scenario: %s; use engine goroutines or auto", kind, why)
		}
		if err := loopSupported(kind); err != nil {
			return "", fmt.Errorf("engine %s: %w", kind, err)
		}
		return kind, nil
	case scenario.EngineAuto, "":
		if why != "" {
			return scenario.EngineGoroutines, nil
		}
		for _, k := range []string{scenario.EngineIOUring, scenario.EngineEpoll} {
			if loopSupported(k) == nil {
				return k, nil
			}
		}
		return scenario.EngineGoroutines, nil
	}
	return "", fmt.Errorf("unknown engine %q", kind)
}

// loopsUnfit says why the event loops cannot run a workload, or "".
func loopsUnfit(cfg driver.Config, actions []driver.Action, p *plan.Plan) string {
	w, ok := cfg.(driver.Wire)
	if !ok {
		return "its protocol needs one goroutine per user"
	}
	if _, plain := w.WireAddr(); !plain {
		return "its connections need TLS or net/http (HTTP/2 on the event loops is a static h2c storm with keep-alive)"
	}
	_, h2 := wireH2(cfg)
	for _, a := range actions {
		if _, ok := a.(driver.WireAction); !ok {
			return "an action is not a single request"
		}
		if ha, ok := a.(driver.WireH2Action); h2 && (!ok || ha.WireH2Headers() == nil) {
			return "an HTTP/2 request with a body runs one goroutine per user"
		}
	}
	if len(p.Journeys) > 0 {
		return "journeys run one goroutine per user"
	}
	if p.PerUserRates {
		return "per-user rates (open model) run one goroutine per user"
	}
	if len(p.Groups) > 1 {
		return "groups of users run one goroutine per user"
	}
	return ""
}

// wireH2 returns the users per connection when the driver's requests are
// HTTP/2 on the event loops (driver.WireH2).
func wireH2(cfg driver.Config) (int, bool) {
	if w, ok := cfg.(driver.WireH2); ok {
		return w.WireH2()
	}
	return 0, false
}
