package pubsub

import (
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// takeoverHook closes a race in mochi-mqtt (v2.7.9) between a client that
// disconnects and the same client connecting again at once with the same
// identifier. The old connection, once it ended, checks that its session
// was not taken over, then unsubscribes by identifier and deletes the
// identifier from the broker's client table: when the new connection's
// takeover comes between the check and the clean-up, the clean-up removes
// the new connection's subscriptions (it loses every message after) and
// the new client itself. Seen here: 3 of 300 quick reconnects lost their
// subscription.
//
// The hook orders the two. A new session waits (OnSessionEstablish, just
// before the broker looks for the old one) until an old one whose clean-up
// has begun is out of the table; an old session whose clean-up would begin
// while a new one is being established waits (OnDisconnect, just before the
// check) until the new one has taken it over, so the check skips the
// clean-up. Both waits are bounded by takeoverWait.
type takeoverHook struct {
	mqtt.HookBase
	srv *mqtt.Server

	mu         sync.Mutex
	connecting map[string]*mqtt.Client // a session being established, by identifier
	ending     map[string]*mqtt.Client // sessions whose clean-up has begun
}

// takeoverWait bounds each wait of takeoverHook.
const takeoverWait = 2 * time.Second

func newTakeoverHook(srv *mqtt.Server) *takeoverHook {
	return &takeoverHook{srv: srv, connecting: map[string]*mqtt.Client{}, ending: map[string]*mqtt.Client{}}
}

func (h *takeoverHook) ID() string { return "throng-takeover" }
func (h *takeoverHook) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablish || b == mqtt.OnSessionEstablished || b == mqtt.OnDisconnect
}

// OnDisconnect runs in the old connection's goroutine before the broker's
// check and clean-up; expire is whether the session ends with it.
func (h *takeoverHook) OnDisconnect(cl *mqtt.Client, _ error, expire bool) {
	if !expire {
		return
	}
	h.mu.Lock()
	nc := h.connecting[cl.ID]
	if nc != nil && nc.Closed() {
		// It failed before it was established (no OnSessionEstablished).
		delete(h.connecting, cl.ID)
		nc = nil
	}
	if nc == nil || cl.IsTakenOver() {
		if !cl.IsTakenOver() {
			h.ending[cl.ID] = cl
			go h.forget(cl)
		}
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	// A new session with this identifier is being established: it will
	// take this one over; wait for that.
	waitFor(func() bool { return cl.IsTakenOver() })
}

// OnSessionEstablish runs in the new connection's goroutine before the
// broker looks for a session to take over.
func (h *takeoverHook) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	h.mu.Lock()
	h.connecting[cl.ID] = cl
	old := h.ending[cl.ID]
	delete(h.ending, cl.ID)
	h.mu.Unlock()
	if old != nil {
		waitFor(func() bool {
			c, ok := h.srv.Clients.Get(cl.ID)
			return !ok || c != old
		})
	}
}

// OnSessionEstablished runs once the new session is in the broker's table.
func (h *takeoverHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	h.mu.Lock()
	if h.connecting[cl.ID] == cl {
		delete(h.connecting, cl.ID)
	}
	h.mu.Unlock()
}

// forget removes an ending session once its clean-up took it out of the
// broker's table (at most takeoverWait later), so that clients that never
// come back leave nothing behind.
func (h *takeoverHook) forget(cl *mqtt.Client) {
	waitFor(func() bool {
		c, ok := h.srv.Clients.Get(cl.ID)
		return !ok || c != cl
	})
	h.mu.Lock()
	if h.ending[cl.ID] == cl {
		delete(h.ending, cl.ID)
	}
	h.mu.Unlock()
}

// pending is the number of sessions the hook still tracks.
func (h *takeoverHook) pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ending) + len(h.connecting)
}

// waitFor polls done every 100 µs until it is true or takeoverWait passed.
func waitFor(done func() bool) {
	for deadline := time.Now().Add(takeoverWait); !done() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
}
