//go:build linux

package netloop

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// openSockets counts this process's file descriptors that are sockets.
func openSockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestNoSocketLeftOpen runs many short loops (a repetition each: users
// that connect, make one request and close) and checks that every socket
// the loops opened is closed when Run returns. With io_uring a socket is
// closed by a queued CLOSE that the kernel runs as deferred task work: a
// ring closed before that work ran left the socket open, one per user in
// about a third of the repetitions. The test runs its kinds one after the
// other: counting the process's descriptors needs no other test at work.
func TestNoSocketLeftOpen(t *testing.T) {
	for _, kind := range kinds(t) {
		t.Run(kind, func(t *testing.T) {
			srv := newServer(t)
			p, cfg := setup(t, kind, 1, `
users: 10
closed: {iterations: 1}
actions: [{path: /ok}]
`, srv.url())
			before := openSockets(t)
			const reps = 60
			for range reps {
				h := newHarness(p, 1)
				run(t, context.Background(), p, cfg, h)
				h.balanced(t)
			}
			// The server closes its side when it reads the client's close:
			// give it a moment.
			var after int
			for deadline := time.Now().Add(5 * time.Second); ; {
				if after = openSockets(t); after <= before || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if after > before {
				t.Errorf("%d sockets open before %d repetitions of 10 users, %d after: %d left open", before, reps, after, after-before)
			}
		})
	}
}
