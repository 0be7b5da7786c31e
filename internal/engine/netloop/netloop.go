// Package netloop runs simulated users of a request/response protocol over
// plain TCP on a few locked OS threads, each an event loop over many
// connections: io_uring where the kernel allows it, epoll otherwise. It is
// the engine's fast executor for drivers with the driver.Wire ability.
//
// Both kinds share one scheduler (loop.go, sched.go, exchange.go) that
// takes the steps of package workload, as the engine's goroutine executor
// does: the same closed and open models, the same timing (latency from the
// scheduled start, service from the actual start) and the same error
// classes. Only the I/O layer differs (io.go): epoll
// reads and writes with plain system calls, io_uring keeps one multishot
// receive per connection fed from a provided-buffer ring and sends the
// static request bytes without a completion on success.
package netloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/rawsock"
	"github.com/throng-io/throng/internal/scenario"
)

// Config describes the connections and the requests.
type Config struct {
	Kind      string        // "io_uring" or "epoll"
	Threads   int           // event-loop threads, >= 1
	Addr      string        // host:port of the server
	KeepAlive bool          // reuse a connection for the next request
	Timeout   time.Duration // bound on one exchange (connect, send, whole response)
	// NewParser returns a parser for one connection's responses.
	NewParser func() driver.WireParser
	Requests  [][]byte        // request bytes by action index; never modified
	Actions   []driver.Action // compiled actions by index, for WireParser.Begin
	// Idempotent says, by action index, which requests may be sent again
	// on a fresh connection when a reused one turns out closed before any
	// byte of the answer came (driver.Idempotent); nil: none.
	Idempotent []bool
	// H2Streams > 0 speaks HTTP/2 with prior knowledge (h2c, h2.go)
	// instead of HTTP/1.1: up to H2Streams users of a thread share one
	// connection, each on its own stream. H2Headers are then the requests'
	// header blocks by action index (driver.WireH2Action: sent as is), and
	// Status judges a response's status (driver.WireH2); Requests and the
	// parser are not used.
	H2Streams int
	H2Headers [][]byte
	Status    func(status int) (driver.Class, error)
}

// Hooks are the engine's side: its clock, its recorders and its gauges.
// Every function is safe to call from any loop thread.
type Hooks struct {
	Now        func() time.Duration // the run's clock: offset from its start
	Recorders  []*metrics.Recorder  // one per thread: thread t records into Recorders[t]
	Started    func()               // a user logged on
	Stopped    func(finished bool)  // a user left; finished: it did all its iterations
	ConnOpened func()
	ConnClosed func()
	Thread     func(tid int) // a loop thread started (its Linux thread ID)
	Aborted    func()        // an action was cut off by the stop and not recorded
	// Take claims one of the plan's shared actions (p.Total > 0): false
	// when they are all taken, and the user then leaves, finished.
	Take func() bool
}

// Kinds of event loop.
const (
	Epoll   = scenario.EngineEpoll
	IOUring = scenario.EngineIOUring
)

// Supported reports whether kind can run on this machine and kernel. For
// io_uring it really sets up a ring with the flags the loop uses, registers
// a provided-buffer ring and receives through a multishot receive, once per
// process; the error says what the kernel (or a seccomp filter, or
// /proc/sys/kernel/io_uring_disabled) refused.
func Supported(kind string) error {
	switch kind {
	case Epoll, IOUring:
		return supported(kind)
	}
	return fmt.Errorf("unknown event loop kind %q (want %s or %s)", kind, IOUring, Epoll)
}

// Run runs this segment's users of p over cfg.Threads loop threads and
// returns when they are all done, or soon after ctx ends. Thread t owns the
// users p.Users[i] with i % Threads == t and records only into
// h.Recorders[t]. It fails only when the run cannot start: a bad
// configuration, an address that does not resolve, a kernel that refuses
// the loop's setup. A stop by ctx is not an error: in-flight actions are
// then reported through h.Aborted and not recorded.
func Run(ctx context.Context, p *plan.Plan, cfg Config, h Hooks) error {
	if err := check(p, &cfg, &h); err != nil {
		return err
	}
	if len(p.Users) == 0 {
		return nil
	}
	if err := Supported(cfg.Kind); err != nil {
		return fmt.Errorf("netloop %s: %w", cfg.Kind, err)
	}
	sa, err := rawsock.Resolve(cfg.Addr)
	if err != nil {
		return fmt.Errorf("netloop: %s: %w", cfg.Addr, err)
	}
	// More threads than users would leave threads without sessions.
	threads := min(cfg.Threads, len(p.Users))

	stop := new(atomic.Bool)
	unwatch := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer unwatch()

	// Every thread sets itself up first; users start only when all did, so
	// a setup failure stops the run before any load.
	var (
		wg    sync.WaitGroup
		ready = make(chan error, threads)
		goOn  = make(chan bool)
	)
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runThread(t, threads, p, &cfg, &h, sa, stop, ready, goOn)
		}()
	}
	var setupErr error
	for range threads {
		if err := <-ready; err != nil && setupErr == nil {
			setupErr = err
		}
	}
	if setupErr != nil {
		close(goOn) // a closed channel without a value: give up
		wg.Wait()
		return setupErr
	}
	for range threads {
		goOn <- true
	}
	wg.Wait()
	return nil
}

// check validates the configuration against the plan.
func check(p *plan.Plan, cfg *Config, h *Hooks) error {
	var errs []error
	if p == nil {
		return errors.New("netloop: no plan")
	}
	switch {
	case p.Model == scenario.Open && p.PerUserRates:
		errs = append(errs, errors.New("per-user rates (open model) are run by the goroutine executor"))
	case p.Model != scenario.Open && p.Model != scenario.Closed:
		errs = append(errs, fmt.Errorf("unknown model %q", p.Model))
	}
	if cfg.Threads < 1 {
		errs = append(errs, fmt.Errorf("threads %d: want at least 1", cfg.Threads))
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: want more than 0", cfg.Timeout))
	}
	if cfg.NewParser == nil {
		errs = append(errs, errors.New("no parser"))
	}
	if len(cfg.Requests) != len(p.Actions) || len(cfg.Actions) != len(p.Actions) {
		errs = append(errs, fmt.Errorf("%d requests and %d compiled actions for %d planned actions", len(cfg.Requests), len(cfg.Actions), len(p.Actions)))
	}
	for i, r := range cfg.Requests {
		if len(r) == 0 {
			errs = append(errs, fmt.Errorf("action %d has an empty request", i))
		}
	}
	if cfg.H2Streams > 0 {
		if len(cfg.H2Headers) != len(p.Actions) || cfg.Status == nil {
			errs = append(errs, fmt.Errorf("HTTP/2: %d header blocks for %d planned actions, or no status judge", len(cfg.H2Headers), len(p.Actions)))
		}
		for i, hb := range cfg.H2Headers {
			if len(hb) == 0 || len(hb) > h2MaxFrame {
				errs = append(errs, fmt.Errorf("HTTP/2: action %d's header block has %d bytes (want 1 to %d)", i, len(hb), h2MaxFrame))
			}
		}
	}
	if h.Now == nil || h.Started == nil || h.Stopped == nil || h.ConnOpened == nil || h.ConnClosed == nil || h.Thread == nil || h.Aborted == nil {
		errs = append(errs, errors.New("a hook is missing"))
	}
	if p.Total > 0 && h.Take == nil {
		errs = append(errs, errors.New("the plan shares a total but the Take hook is missing"))
	}
	if len(h.Recorders) < min(cfg.Threads, max(len(p.Users), 1)) {
		errs = append(errs, fmt.Errorf("%d recorders for %d threads", len(h.Recorders), cfg.Threads))
	}
	if len(errs) > 0 {
		return fmt.Errorf("netloop: %w", errors.Join(errs...))
	}
	return nil
}
