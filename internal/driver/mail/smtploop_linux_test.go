package mail

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"

	"github.com/throng-io/throng/internal/driver/mail/smtpclient"
)

// Many senders at once through the submission loop (smtp_engine epoll)
// into the embedded server: every message arrives once, in the mailbox it
// was sent to, whole. Slots of the loop are reused dozens of times over.
// Garbage collections meanwhile stop the world in milliseconds: the loop's
// raw waits give way to the runtime's preemption (a loop that retried its
// wait on the signal held a GC up for seconds).
func TestSubmitLoopManySenders(t *testing.T) {
	srv := mailtest.Embedded(t)
	const users, each = 30, 8
	var names []string
	for i := range users {
		names = append(names, fmt.Sprintf("user%04d", i+1))
	}
	if err := srv.Provision(names, "pw", nil); err != nil {
		t.Fatal(err)
	}
	c, acts := load(t, fmt.Sprintf("users: %d\nclosed: {total: 1000}\nmail: {password: pw, smtp_engine: epoll}\nactions: [{name: send, to: [user0001@example.test], size: 40000B, sizes: fixed}]\n", users), "smtp://"+srv.SMTPAddr())
	if c.SMTPEngine != smtpEngineEpoll {
		t.Fatalf("engine %q", c.SMTPEngine)
	}
	ss := open(t, c, users)
	var wg sync.WaitGroup
	errs := make(chan error, users*each)
	stop := make(chan struct{})
	slowest := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		defer func() { slowest <- worst }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			t0 := time.Now()
			runtime.GC()
			worst = max(worst, time.Since(t0))
		}
	}()
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := s.Do(context.Background(), acts["send"]); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if worst := <-slowest; worst > time.Second {
		t.Errorf("a garbage collection during the sends took %v", worst)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0001", "pw", "STATUS INBOX (MESSAGES)"), " ")
	if want := fmt.Sprintf("MESSAGES %d", users*each); !strings.Contains(out, want) {
		t.Errorf("user0001: %s, want %s", out, want)
	}
}

// The Config owns its loop: the first send starts it, the repetition's end
// (Drain) closes it, and the next repetition's first send starts another.
func TestSubmitLoopOwner(t *testing.T) {
	addr := mailtest.FakeSMTP(t, true, "")
	c, acts := load(t, "users: 1\nclosed: {total: 1}\nmail: {smtp_engine: epoll}\nactions: [{name: send, to: [user0002@example.test], size: 2000B, sizes: fixed}]\n", "smtp://"+addr)
	c.Observe(&events{})
	ss := open(t, c, 1)
	if c.smtpLoop != nil {
		t.Fatal("a loop before the first send")
	}
	for rep := range 2 {
		if _, err := ss[0].Do(context.Background(), acts["send"]); err != nil {
			t.Fatal(err)
		}
		l := c.smtpLoop
		if l == nil {
			t.Fatalf("repetition %d: no loop after a send", rep)
		}
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c.smtpLoop != nil {
			t.Fatalf("repetition %d: the loop outlived Drain", rep)
		}
		// Closed (Close returns once the loop's goroutine has ended): a
		// send handed to it fails at once.
		tx := &smtpclient.Txn{EHLO: "c", From: "f@x", Rcpts: []string{"u@x"}, Deadline: time.Now().Add(time.Minute)}
		if l.Submit(context.Background(), tx, c.smtpSA, time.Minute); tx.Err() != smtpclient.ErrLoopClosed {
			t.Fatalf("repetition %d: a send to the loop after Drain: %v", rep, tx.Err())
		}
	}
}
