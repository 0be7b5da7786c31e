package mail

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/imapclient"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// The driver's event actions (driver.Events), in the order of
// EventActions.
const (
	evDeliver    = iota // a delivery owed to a recipient: seen (timed or not), or lost
	evMisdeliver        // a copy in the INBOX of a user who is none of the message's recipients
	evDuplicate         // a second (third...) copy in a recipient's INBOX
	evLogon             // a user's log-on (Open, a log-on again), timed, with its failures
)

// EventActions implements driver.Events. "deliver" counts every delivery
// a message owes, one per recipient (lists expanded): timed from the SMTP
// server's acceptance to the moment the recipient's session saw it,
// untimed when found at a log-on or by Drain, class lost when never
// found. "misdeliver" counts copies found in the INBOX of a user who is
// none of the message's recipients (class misdelivered), "duplicate"
// extra copies in a recipient's INBOX (class duplicate). Every event's
// cause is its message's submission. "log-on" is every log-on of a
// user (its first, at Open, and each again: the logon action, a logoff
// with again, a session repaired after a break), timed from the connect
// to the end of the client's first look at the INBOX, with its failure's
// class (auth: the server refused the credentials); its cause is its
// start, so it counts in the phase it began in.
func (c *Config) EventActions() []string {
	return []string{"deliver", "misdeliver", "duplicate", LogonEvent}
}

// LogonEvent names the row of the users' log-ons.
const LogonEvent = "log-on"

// Observe implements driver.Events: a repetition begins, with a fresh
// generation of messages (nothing is owed).
func (c *Config) Observe(sink driver.Sink) {
	c.track.begin()
	c.track.sink.Store(&sink)
}

// Drain implements driver.Events: the repetition's sends are over, so the
// submission loop is closed; then the mailboxes are looked at again (log
// on, search the INBOX for this repetition's marks above the watermark):
// first every mailbox of this process (when a message was sent), the
// ones still owed mail first, so that copies misdelivered after their
// user's last look are counted;
// then, every 250 ms, the ones still owed mail, until nothing is missing
// or ctx ends. What is still missing then is counted lost, one event per
// recipient.
func (c *Config) Drain(ctx context.Context) error {
	// Every user has stopped: no more sends in this repetition.
	c.closeSMTP()
	t := c.track
	if !c.submitOnly && t.current().next.Load() > 0 {
		all := t.watched()
		var looked atomic.Int64
		err := c.forEachUser(ctx, all, c.Population.Parallel, func(ctx context.Context, id int) error {
			err := c.drainUser(ctx, id)
			if err == nil {
				looked.Add(1)
			}
			return err
		})
		if n := int(looked.Load()); n < len(all) {
			why := "its bound (phases.drain) passed"
			if err != nil {
				why = fmt.Sprintf("the first failure: %v", err)
			}
			c.logf("mail: the drain looked at %d of %d mailboxes after the load (%s): copies misdelivered "+
				"to the others after their users' last look are not counted", n, len(all), why)
		}
		for ctx.Err() == nil {
			users := t.pending()
			if len(users) == 0 {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			if ctx.Err() != nil {
				break
			}
			c.forEachUser(ctx, users, c.Population.Parallel, func(ctx context.Context, id int) error {
				return c.drainUser(ctx, id)
			})
		}
	}
	t.recordLost()
	return nil
}

// drainUser looks for this repetition's messages in one user's INBOX
// above the watermark, and raises it over what it saw.
func (c *Config) drainUser(ctx context.Context, id int) error {
	ic, err := c.logon(ctx, id)
	if err != nil {
		return err
	}
	defer ic.Logout(ctx)
	if err := ic.Select(ctx, Inbox, true, false); err != nil {
		return err
	}
	t := c.track
	wm, _ := t.watermark(id, ic.UIDValidity)
	crit := []byte("UID " + strconv.FormatUint(uint64(wm)+1, 10) + ":* HEADER " + msggen.MarkHeader + " " + t.current().nonce)
	uids, err := ic.Search(ctx, crit)
	if err != nil || len(uids) == 0 {
		return err
	}
	top := wm
	err = ic.Fetch(ctx, true, imapclient.UIDSet(uids), "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS ("+msggen.MarkHeader+")])", func(f *imapclient.Fetched) {
		if f.UID > wm {
			t.seen(id, headerValue(f.Header, msggen.MarkHeader), copyAt(ic.UIDValidity, f.UID), time.Time{}, nil)
			top = max(top, f.UID)
		}
	})
	t.advance(id, ic.UIDValidity, top)
	return err
}

// forEachUser runs fn for every user with at most par at once, each
// within its own timeout, and returns the first error (the others are
// still run).
func (c *Config) forEachUser(ctx context.Context, users []int, par int, fn func(context.Context, int) error) error {
	ch := make(chan int)
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for range min(par, len(users)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ch {
				if err := fn(ctx, id); err != nil {
					e := fmt.Errorf("user %s: %w", c.UserName(id), err)
					first.CompareAndSwap(nil, &e)
				}
			}
		}()
	}
	for _, id := range users {
		select {
		case ch <- id:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}

// headerValue returns the value of header name in a header block (nil
// when absent): case-insensitive, unfolded lines only.
func headerValue(h []byte, name string) []byte {
	for len(h) > 0 {
		end := 0
		for end < len(h) && h[end] != '\n' {
			end++
		}
		line := h[:end]
		if end < len(h) {
			h = h[end+1:]
		} else {
			h = nil
		}
		if len(line) > len(name) && line[len(name)] == ':' && equalFoldStr(line[:len(name)], name) {
			v := line[len(name)+1:]
			for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
				v = v[1:]
			}
			for len(v) > 0 && (v[len(v)-1] == '\r' || v[len(v)-1] == ' ') {
				v = v[:len(v)-1]
			}
			return v
		}
	}
	return nil
}

func equalFoldStr(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
