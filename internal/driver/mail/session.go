package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/imapclient"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// logon connects and logs user id on (no mailbox selected).
func (c *Config) logon(ctx context.Context, id int) (*imapclient.Conn, error) {
	if c.targetErr != nil {
		return nil, driver.Errorf(driver.Other, c.targetErr)
	}
	ic, err := c.dialIMAP(ctx)
	if err != nil {
		return nil, err
	}
	if err := ic.Login(ctx, c.UserName(id), c.password, c.Auth == "plain"); err != nil {
		ic.Close()
		return nil, err
	}
	return ic, nil
}

// dialIMAP connects to the IMAP server (TLS for imaps) and reads its
// greeting.
func (c *Config) dialIMAP(ctx context.Context) (*imapclient.Conn, error) {
	var tlsCfg *tls.Config
	if c.tls {
		tlsCfg = c.tlsCfg
	}
	return imapclient.Dial(ctx, c.imapAddr, c.Timeout.D(), tlsCfg)
}

// session is one simulated mail user. It implements driver.Session. Between
// actions it holds its IMAP connection (no buffer, no goroutine, except
// the IDLE watcher in cached mode).
type session struct {
	c    *Config
	id   int
	r    *msggen.RNG
	mu   sync.Mutex       // guards ic against the run's stop (abort)
	ic   *imapclient.Conn // nil while logged off
	dead bool             // the run is stopping
	stop func() bool
	idle *idler // the IDLE watcher, while one runs
	// watchIn and watchOut are the IDLE watchers' traffic (IDLE, the
	// server's news, DONE, the FETCH of new headers: no action's) that no
	// delivery event has carried yet; the next one the watcher records
	// carries it. What is left when the session closes is not counted.
	watchIn, watchOut int64

	sent      uint32 // messages sent so far (seeds the next)
	processed uint32 // highest INBOX UID process-inbox has handled
	validity  uint32 // UIDVALIDITY of the cached copy
	// Cached mode: what the local copy knows of the INBOX.
	cacheNext   uint32
	cacheModseq uint64
	// syncNew and syncFlags count what the cached client's log-on
	// synchronisations imapclient.Fetched: new messages (UID FETCH UIDNEXT:*) and
	// flag changes (FETCH CHANGEDSINCE, with CONDSTORE).
	syncNew, syncFlags int
	folders            []string // mailbox list, once listed (cached mode)
	// tagCounts are the populated INBOX messages naming each codename
	// (computed at the first verified search). Process-inbox only handles
	// mail that arrived after the population, so these stay in the INBOX.
	tagCounts    *[len(msggen.Codenames)]int32
	procValidity uint32 // UIDVALIDITY of processed

	bytesIn, bytesOut int64 // SMTP and CalDAV bytes of the current action
	// retiredIn and retiredOut are what the session's closed IMAP
	// connections moved (imapBytes adds the open one's).
	retiredIn, retiredOut int64
}

var _ driver.Session = (*session)(nil)

// LogonAtStart implements driver.LogonAtStart: a mail client logs on when
// its user arrives (the ramp is the log-on storm) and stays logged on.
func (c *Config) LogonAtStart() bool { return !c.submitOnly }

var _ driver.LogonAtStart = (*Config)(nil)

// DefaultThresholds implements driver.Thresholder: a run in which a user
// could not log on (a wrong password, a server refusing or failing
// log-ons) fails (exit code 1), whatever the phase. A threshold of the
// scenario on errors replaces it ("log-on.errors >= 0" lets any count
// pass, still shown). An smtp:// target has no log-ons.
func (c *Config) DefaultThresholds() []string {
	if c.submitOnly {
		return nil
	}
	return []string{"all: " + LogonEvent + ".errors == 0"}
}

var _ driver.Thresholder = (*Config)(nil)

// Open implements driver.Config: it logs the user on (IMAP LOGIN or
// AUTHENTICATE PLAIN, SELECT INBOX and the client's first look at it).
func (c *Config) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	c.track.setUsers(u.Users)
	c.track.claim(u.ID)
	s := &session{c: c, id: u.ID, r: msggen.NewRNG(u.Seed ^ 0x73657373)}
	if c.submitOnly {
		return s, nil
	}
	if err := s.logon(ctx, true); err != nil {
		return nil, err
	}
	s.stop = context.AfterFunc(ctx, s.abort)
	s.afterAction()
	return s, nil
}

// abort unblocks an action in progress when the run stops.
func (s *session) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	if s.ic != nil {
		s.ic.NC.SetDeadline(time.Unix(1, 0))
	}
}

func (s *session) setConn(ic *imapclient.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		if ic != nil {
			ic.Close()
		}
		return false
	}
	s.retire(ic)
	s.ic = ic
	return true
}

// retire adds the open connection's bytes to the closed ones' when it is
// replaced by next (nil: dropped); s.mu is held.
func (s *session) retire(next *imapclient.Conn) {
	if s.ic != nil && s.ic != next {
		s.retiredIn += s.ic.In
		s.retiredOut += s.ic.Out
	}
}

// imapBytes is what every IMAP connection of the session has received and
// sent so far: differences of it are an action's IMAP traffic, whatever
// connections the action closed or opened.
func (s *session) imapBytes() (in, out int64) {
	in, out = s.retiredIn, s.retiredOut
	if s.ic != nil {
		in += s.ic.In
		out += s.ic.Out
	}
	return in, out
}

// logon logs the user on (logonOnce) and records it as the event
// "log-on", timed, with its class, unless the run is stopping. Its bytes
// are the event's when own (the log-on at Open, which no action carries);
// a log-on inside an action is in that action's bytes already.
func (s *session) logon(ctx context.Context, own bool) error {
	t0 := time.Now()
	in0, out0 := s.imapBytes()
	err := s.logonOnce(ctx)
	if ctx.Err() != nil {
		return err
	}
	var in, out int64
	if own {
		in1, out1 := s.imapBytes()
		in, out = in1-in0, out1-out0
	}
	if sink := s.c.track.sink.Load(); sink != nil {
		(*sink).Event(evLogon, t0, time.Since(t0), in, out, driver.Classify(err), err)
	}
	return err
}

// logonOnce logs the user on and looks at the INBOX as the client would: an
// online client reads the first screen of headers; a cached one fetches
// what changed since its copy. Either way, new mail is noticed.
func (s *session) logonOnce(ctx context.Context) error {
	ic, err := s.c.logon(ctx, s.id)
	if err != nil {
		return err
	}
	if !s.setConn(ic) {
		return context.Cause(ctx)
	}
	cached := s.c.Mode == Cached
	if err := ic.Select(ctx, Inbox, false, cached); err != nil {
		return err
	}
	if cached && s.cacheNext > 0 && ic.UIDValidity == s.validity {
		// Synchronise: new messages since the copy, flag changes since its
		// modseq (CONDSTORE).
		next := s.cacheNext
		if err := s.fetchHeaders(ctx, true, strconv.FormatUint(uint64(next), 10)+":*", func(f *imapclient.Fetched) {
			if f.UID >= next { // "N:*" names the last message when none is new
				s.syncNew++
			}
		}); err != nil {
			return err
		}
		if ic.Has(imapclient.CapCondstore) && s.cacheModseq > 0 && ic.Exists > 0 {
			if err := ic.Fetch(ctx, false, "1:*", "(UID FLAGS) (CHANGEDSINCE "+strconv.FormatUint(s.cacheModseq, 10)+")", func(*imapclient.Fetched) { s.syncFlags++ }); err != nil {
				return err
			}
		}
	} else if err := s.firstScreen(ctx); err != nil {
		return err
	}
	if cached {
		s.validity, s.cacheNext, s.cacheModseq = ic.UIDValidity, ic.UIDNext, ic.ModSeq
	}
	if s.procValidity != ic.UIDValidity {
		// Everything in the INBOX at the first log-on counts as handled.
		s.procValidity, s.processed = ic.UIDValidity, max(ic.UIDNext, 1)-1
	}
	// What arrived while the user was away is counted, not timed: the
	// latency is from acceptance to visibility in a session watching.
	return s.checkNew(ctx, time.Time{}, nil)
}

// firstScreen fetches the headers of the newest page of the selected
// mailbox.
func (s *session) firstScreen(ctx context.Context) error {
	ic := s.ic
	if ic.Exists == 0 {
		return nil
	}
	from := max(1, int(ic.Exists)-s.c.Page+1)
	return s.fetchHeaders(ctx, false, strconv.Itoa(from)+":*", nil)
}

// screenItems are what a client shows in a message list.
const screenItems = "(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (FROM SUBJECT DATE " + msggen.MarkHeader + " " + msggen.TagHeader + ")])"

// fetchHeaders fetches list headers for a set (sequence or UID). Marks
// are reported by checkNew only, which keeps the delivery watermark.
func (s *session) fetchHeaders(ctx context.Context, uid bool, set string, fn func(*imapclient.Fetched)) error {
	return s.ic.Fetch(ctx, uid, set, screenItems, fn)
}

// checkNew looks at INBOX messages above the delivery watermark, reports
// the marks it finds as seen at time seen (zero: found, not timed), and
// raises the watermark. The first time in a run, without a watermark from
// Prepare, it searches the INBOX for this run's marks instead of reading
// every header. traffic, when not nil, gives the bytes (in, out) the
// delivery events it records carry (the IDLE watcher's; an action's
// exchanges are counted in the action).
func (s *session) checkNew(ctx context.Context, seen time.Time, traffic func() (in, out int64)) error {
	ic := s.ic
	t := s.c.track
	wm, known := t.watermark(s.id, ic.UIDValidity)
	if !known {
		uids, err := ic.Search(ctx, []byte("HEADER "+msggen.MarkHeader+" "+t.current().nonce))
		if err != nil {
			return err
		}
		if len(uids) > 0 {
			err = ic.Fetch(ctx, true, imapclient.UIDSet(uids), "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS ("+msggen.MarkHeader+")])", func(f *imapclient.Fetched) {
				t.seen(s.id, headerValue(f.Header, msggen.MarkHeader), copyAt(ic.UIDValidity, f.UID), seen, traffic)
			})
			if err != nil {
				return err
			}
		}
		t.advance(s.id, ic.UIDValidity, max(ic.UIDNext, 1)-1)
		return nil
	}
	top := wm
	err := ic.Fetch(ctx, true, strconv.FormatUint(uint64(wm)+1, 10)+":*", "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS ("+msggen.MarkHeader+")])", func(f *imapclient.Fetched) {
		if f.UID > wm {
			t.seen(s.id, headerValue(f.Header, msggen.MarkHeader), copyAt(ic.UIDValidity, f.UID), seen, traffic)
			top = max(top, f.UID)
		}
	})
	if err != nil {
		return err
	}
	t.advance(s.id, ic.UIDValidity, top)
	return nil
}

// Do implements driver.Session: it stops the IDLE watcher, logs on again
// when the connection is gone (the server restarted, a logoff), runs the
// action, and starts watching again.
func (s *session) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	act := a.(*action)
	s.bytesIn, s.bytesOut = 0, 0
	s.stopIdle()
	// The action's IMAP bytes are those of every connection it used: a log-on
	// again included, none of what came before (the watcher's is carried by
	// delivery events).
	in0, out0 := s.imapBytes()
	if act.kind.imap {
		if s.ic == nil || s.ic.Broken {
			if s.ic != nil {
				s.ic.Close()
			}
			if err := s.logon(ctx, false); err != nil {
				s.dropConn()
				return s.outcome(in0, out0), err
			}
		}
		s.ic.Acquire()
	}
	err := act.kind.run(ctx, s, act)
	out := s.outcome(in0, out0)
	if s.ic != nil && s.ic.Broken {
		s.dropConn()
	}
	s.afterAction()
	return out, err
}

// outcome is the action's bytes: its SMTP and CalDAV ones and the IMAP
// ones since imapBytes was in0, out0.
func (s *session) outcome(in0, out0 int64) driver.Outcome {
	in, out := s.imapBytes()
	return driver.Outcome{BytesIn: s.bytesIn + in - in0, BytesOut: s.bytesOut + out - out0}
}

// afterAction releases the buffers and, in IDLE mode, starts watching.
// Otherwise it clears the connection's deadline: a deadline left set is a
// runtime timer that fires a timeout later and wakes the idle process for
// nothing (10,000 users acting at real-time rates left about 25 a second).
func (s *session) afterAction() {
	if s.ic == nil {
		return
	}
	s.ic.Release()
	if s.c.idle && s.ic.Has(imapclient.CapIdle) && s.ic.Mailbox == Inbox && !s.ic.Broken {
		s.startIdle()
		return
	}
	s.mu.Lock()
	if !s.dead { // abort's past deadline must stay
		s.ic.NC.SetDeadline(time.Time{})
	}
	s.mu.Unlock()
}

// dropConn forgets a broken connection; the next action logs on again.
func (s *session) dropConn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ic != nil {
		s.ic.Close()
		s.retire(nil)
		s.ic = nil
	}
}

// ensureInbox selects the INBOX if another mailbox is selected.
func (s *session) ensureInbox(ctx context.Context) error {
	if s.ic.Mailbox == Inbox {
		return nil
	}
	return s.ic.Select(ctx, Inbox, false, s.c.Mode == Cached)
}

// Close implements driver.Session: LOGOUT, within a short bound.
func (s *session) Close() error {
	s.stopIdle()
	if s.stop != nil {
		s.stop()
	}
	s.mu.Lock()
	ic := s.ic
	s.ic = nil
	s.mu.Unlock()
	if ic == nil || ic.Broken {
		if ic != nil {
			ic.Close()
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(2*time.Second, s.c.Timeout.D()))
	defer cancel()
	if err := ic.Logout(ctx); err != nil {
		return fmt.Errorf("mail: logging %s off: %w", s.c.UserName(s.id), err)
	}
	return nil
}
