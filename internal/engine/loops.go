package engine

import (
	"context"
	"fmt"
	"runtime"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine/netloop"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// loops runs users on event-loop threads (package netloop): many
// connections per locked OS thread, for drivers with the Wire ability.
type loops struct {
	cfg     Config
	threads int
	nl      netloop.Config
}

func newLoops(cfg Config) (*loops, error) {
	w := cfg.Driver.(driver.Wire)
	addr, _ := w.WireAddr()
	l := &loops{cfg: cfg, threads: LoopThreads(cfg.Kind, cfg.Threads, len(cfg.Plan.Users))}
	// A loop thread keeps its scheduler slot (P) while it waits in the
	// kernel, so the rest of the process (collector, journal, an embedded
	// target) needs one more P than there are loops.
	if runtime.GOMAXPROCS(0) < l.threads+1 {
		runtime.GOMAXPROCS(l.threads + 1)
	}
	l.nl = netloop.Config{
		Kind: cfg.Kind, Threads: l.threads, Addr: addr,
		KeepAlive: w.WireKeepAlive(), Timeout: w.WireTimeout(),
		NewParser: w.NewWireParser, Actions: cfg.Actions,
	}
	streams, h2 := wireH2(cfg.Driver)
	for _, a := range cfg.Actions {
		l.nl.Requests = append(l.nl.Requests, a.(driver.WireAction).WireRequest())
		l.nl.Idempotent = append(l.nl.Idempotent, driver.IsIdempotent(a))
		if h2 {
			l.nl.H2Headers = append(l.nl.H2Headers, a.(driver.WireH2Action).WireH2Headers())
		}
	}
	if h2 {
		l.nl.H2Streams = streams
		l.nl.Status = cfg.Driver.(driver.WireH2).WireStatus
	}
	return l, nil
}

func (l *loops) recorders() int { return l.threads }

func (l *loops) run(ctx context.Context, st *state) error {
	return netloop.Run(ctx, l.cfg.Plan, l.nl, netloop.Hooks{
		Now:       st.Now,
		Recorders: st.recs,
		Started:   func() { st.active.Add(1) },
		Stopped: func(finished bool) {
			st.active.Add(-1)
			if finished && l.cfg.Plan.CountBound {
				st.userFinished()
			}
		},
		ConnOpened: func() { st.conns.Add(1) },
		ConnClosed: func() { st.conns.Add(-1) },
		Thread: func(tid int) {
			st.mu.Lock()
			st.threads = append(st.threads, tid)
			st.mu.Unlock()
		},
		Aborted: func() { st.aborted.Add(1) },
		Take:    st.take,
	})
}

// loopSupported reports whether an event-loop kind works on this machine.
func loopSupported(kind string) error { return netloop.Supported(kind) }

// Supported reports whether an engine kind can run on this machine.
func Supported(kind string) error {
	switch kind {
	case scenario.EngineGoroutines:
		return nil
	case scenario.EngineEpoll, scenario.EngineIOUring:
		return netloop.Supported(kind)
	}
	return fmt.Errorf("unknown engine %q", kind)
}

// LoopThreads is the number of event-loop threads a kind uses for a number
// of users when asked for threads (0: one per core, at most one per user).
func LoopThreads(kind string, threads, users int) int {
	if kind != scenario.EngineEpoll && kind != scenario.EngineIOUring {
		return 0
	}
	if threads <= 0 {
		threads = sampler.Cores()
	}
	return max(1, min(threads, users))
}
