package mail

import (
	"context"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

const smallPop = `
users: 3
model: open
phases: {steady: 1m}
mail:
  mode: cached
  population: {inbox: 5, deleted: 1, folders: 2, folder_messages: 2, size: 5KB}
actions:
  - {name: send, rate: 1/s, recipients: 2}
  - {name: process-inbox, rate: 1/s}
`

// In cached mode the recipients' IDLE watchers see a message within
// moments of its acceptance, and nothing is left for Drain.
func TestIdleSeesDeliveries(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, smallPop, srv.URL())
	c.Provisioner = srv
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, 3, 7)
	ss := open(t, c, 3)
	for i := range 5 {
		if _, err := ss[i%3].Do(context.Background(), acts["send"]); err != nil {
			t.Fatal(err)
		}
	}
	want := c.track.owedTotal()
	if want < 5 {
		t.Fatalf("5 messages reach %d recipients", want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ev.timed() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := ev.timed(); got != want {
		t.Fatalf("%d deliveries seen by IDLE, want %d", got, want)
	}
	for _, l := range ev.lat {
		if l > time.Second {
			t.Errorf("delivery latency %v with IDLE on the embedded server", l)
		}
	}
	// The watchers' traffic is no action's: the deliveries carry it. Every
	// delivery's mark header came in a FETCH; IDLE and DONE went out.
	ev.mu.Lock()
	in, out := ev.bytes, ev.sent
	ev.mu.Unlock()
	if min := int64(want * len(msggen.MarkHeader)); in < min {
		t.Errorf("deliveries carried %d bytes received, their %d mark headers alone are %d", in, want, min)
	}
	if min := int64(len("a1 IDLE\r\nDONE\r\n")); out < min {
		t.Errorf("deliveries carried %d bytes sent, IDLE and DONE are %d", out, min)
	}
	// An action stops the watcher promptly.
	t0 := time.Now()
	if _, err := ss[0].Do(context.Background(), acts["process-inbox"]); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("process-inbox took %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Drain(ctx)
	if ev.count(driver.Lost) != 0 {
		t.Errorf("lost %d: %v", ev.count(driver.Lost), ev.msgs)
	}
}
