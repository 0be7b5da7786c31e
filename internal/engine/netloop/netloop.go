// Package netloop runs simulated users of a request/response protocol over
// plain TCP on a few locked OS threads, each an event loop over many
// connections: io_uring where the kernel allows it, epoll otherwise. It is
// the engine's fast executor for drivers with the driver.Wire ability.
package netloop

import (
	"context"
	"errors"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
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
}

// Supported reports whether kind can run on this machine and kernel.
func Supported(kind string) error {
	return errors.New("event loops are not built yet")
}

// Run runs this segment's users of p over cfg.Threads loop threads and
// returns when they are all done, or soon after ctx ends.
func Run(ctx context.Context, p *plan.Plan, cfg Config, h Hooks) error {
	return errors.New("event loops are not built yet")
}
