package mail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// The driver's event actions (driver.Events).
const (
	evDeliver = iota // a sent message seen in a recipient's INBOX
)

// EventActions implements driver.Events: "deliver" counts every delivery
// of a message a user sent (one per recipient, lists expanded), timed from
// the SMTP server's acceptance to the moment the recipient's session saw
// it; deliveries found only by Drain are counted without a time, and the
// ones never found are class lost.
func (c *Config) EventActions() []string { return []string{"deliver"} }

// Observe implements driver.Events.
func (c *Config) Observe(sink driver.Sink) { c.track.sink.Store(&sink) }

// tracker follows every message sent in this run until each of its
// recipients has seen it. Everything is lock-free on the hot path.
type tracker struct {
	nonce  string // tells this run's messages from any other's
	next   atomic.Uint64
	mu     sync.Mutex // allocating chunks, users
	chunks [1 << 16]atomic.Pointer[[chunkSize]sentMsg]
	users  atomic.Pointer[[]recipient]
	sink   atomic.Pointer[driver.Sink]
}

const chunkSize = 4096

// sentMsg is one accepted message.
type sentMsg struct {
	at   atomic.Int64 // acceptance, unix nanoseconds (0: not yet)
	want atomic.Int32 // distinct recipients (0: none, or DATA failed)
	got  atomic.Int32 // recipients that saw it
}

// recipient is a user's delivery state.
type recipient struct {
	expected atomic.Int32  // deliveries sent to this user
	seen     atomic.Int32  // deliveries seen
	mark     atomic.Uint64 // UIDVALIDITY<<32 | highest INBOX UID already looked at
	known    atomic.Bool   // mark is set (after population or a first search)
}

func newTracker() *tracker {
	var b [6]byte
	rand.Read(b[:])
	return &tracker{nonce: hex.EncodeToString(b[:])}
}

// setUsers sizes the per-user state for n users (once; later calls with
// the same n are no-ops).
func (t *tracker) setUsers(n int) []recipient {
	if u := t.users.Load(); u != nil && len(*u) >= n {
		return *u
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if u := t.users.Load(); u != nil && len(*u) >= n {
		return *u
	}
	u := make([]recipient, n)
	t.users.Store(&u)
	return u
}

func (t *tracker) user(id int) *recipient {
	u := t.users.Load()
	if u == nil || id < 0 || id >= len(*u) {
		return nil
	}
	return &(*u)[id]
}

// newMark reserves a sequence number and returns it with its header value.
func (t *tracker) newMark() (uint64, string) {
	seq := t.next.Add(1)
	return seq, t.nonce + "." + strconv.FormatUint(seq, 10)
}

func (t *tracker) entry(seq uint64, alloc bool) *sentMsg {
	ci, i := seq/chunkSize, seq%chunkSize
	if ci >= uint64(len(t.chunks)) {
		return nil
	}
	ch := t.chunks[ci].Load()
	if ch == nil {
		if !alloc {
			return nil
		}
		t.mu.Lock()
		if ch = t.chunks[ci].Load(); ch == nil {
			ch = new([chunkSize]sentMsg)
			t.chunks[ci].Store(ch)
		}
		t.mu.Unlock()
	}
	return &ch[i]
}

// expect records, before DATA, that message seq is about to reach these
// distinct users: a fast server may deliver it before its answer to DATA
// is read.
func (t *tracker) expect(seq uint64, users []int) {
	e := t.entry(seq, true)
	if e == nil || len(users) == 0 {
		return
	}
	e.want.Store(int32(len(users)))
	for _, u := range users {
		if r := t.user(u); r != nil {
			r.expected.Add(1)
		}
	}
}

// accepted records that the SMTP server accepted message seq at time at.
func (t *tracker) accepted(seq uint64, at time.Time) {
	if e := t.entry(seq, false); e != nil {
		e.at.Store(at.UnixNano())
	}
}

// cancel forgets message seq: DATA failed, nothing was delivered.
func (t *tracker) cancel(seq uint64, users []int) {
	e := t.entry(seq, false)
	if e == nil || e.want.Swap(0) == 0 {
		return
	}
	for _, u := range users {
		if r := t.user(u); r != nil {
			r.expected.Add(-1)
		}
	}
}

// watermark returns the highest INBOX UID of user already looked at, for
// the mailbox's UIDVALIDITY, and whether it is known.
func (t *tracker) watermark(user int, validity uint32) (uint32, bool) {
	r := t.user(user)
	if r == nil || !r.known.Load() {
		return 0, false
	}
	m := r.mark.Load()
	if uint32(m>>32) != validity {
		return 0, false
	}
	return uint32(m), true
}

// advance raises user's watermark to uid.
func (t *tracker) advance(user int, validity, uid uint32) {
	r := t.user(user)
	if r == nil {
		return
	}
	for {
		old := r.mark.Load()
		if r.known.Load() && uint32(old>>32) == validity && uint32(old) >= uid {
			return
		}
		if r.mark.CompareAndSwap(old, uint64(validity)<<32|uint64(uid)) {
			r.known.Store(true)
			return
		}
	}
}

// seen records that user saw the message whose mark header is value, at
// time now (zero: found by Drain, no latency). It ignores marks of other
// runs and a second sighting by the same recipient. The event carries the
// bytes traffic gives, called only when the event is recorded (nil: none):
// the message's size would be bytes that never crossed the network, and
// the FETCH that saw it is counted in its action unless the IDLE watcher
// made it.
func (t *tracker) seen(user int, value []byte, now time.Time, traffic func() (in, out int64)) {
	if len(value) <= len(t.nonce)+1 || string(value[:len(t.nonce)]) != t.nonce || value[len(t.nonce)] != '.' {
		return
	}
	seq, err := strconv.ParseUint(string(value[len(t.nonce)+1:]), 10, 64)
	if err != nil {
		return
	}
	e := t.entry(seq, false)
	if e == nil || e.want.Load() == 0 || e.got.Add(1) > e.want.Load() {
		return
	}
	if r := t.user(user); r != nil {
		r.seen.Add(1)
	}
	sink := t.sink.Load()
	if sink == nil {
		return
	}
	lat := time.Duration(-1)
	if !now.IsZero() {
		// Seen before the answer to DATA was read: latency 0.
		if at := e.at.Load(); at != 0 {
			lat = max(0, now.Sub(time.Unix(0, at)))
		} else {
			lat = 0
		}
	}
	var in, out int64
	if traffic != nil {
		in, out = traffic()
	}
	(*sink).Event(evDeliver, time.Time{}, lat, in, out, driver.OK, nil)
}

// expectedTotal is the number of deliveries expected so far.
func (t *tracker) expectedTotal() int {
	n := 0
	if u := t.users.Load(); u != nil {
		for i := range *u {
			n += int((*u)[i].expected.Load())
		}
	}
	return n
}

// pending lists the users still waiting for deliveries.
func (t *tracker) pending() []int {
	u := t.users.Load()
	if u == nil {
		return nil
	}
	var out []int
	for i := range *u {
		r := &(*u)[i]
		if r.seen.Load() < r.expected.Load() {
			out = append(out, i)
		}
	}
	return out
}

// Drain implements driver.Events: the repetition's sends are over, so the
// submission loop is closed; then every user still waiting for messages
// is looked at again (log on, search its INBOX for this run's marks)
// until nothing is missing or ctx ends; what is still missing then is
// counted lost, one event per missing delivery.
func (c *Config) Drain(ctx context.Context) error {
	// Every user has stopped: no more sends in this repetition.
	c.closeSMTP()
	t := c.track
	for round := 0; ; round++ {
		users := t.pending()
		if len(users) == 0 || ctx.Err() != nil {
			break
		}
		if round > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			if ctx.Err() != nil {
				break
			}
		}
		c.forEachUser(ctx, users, c.Population.Parallel, func(ctx context.Context, id int) error {
			return c.drainUser(ctx, id)
		})
	}
	t.recordLost()
	return nil
}

// drainUser looks for this run's messages in one user's INBOX above the
// watermark.
func (c *Config) drainUser(ctx context.Context, id int) error {
	ic, err := c.logon(ctx, id)
	if err != nil {
		return err
	}
	defer ic.logout(ctx)
	if err := ic.selectBox(ctx, Inbox, true, false); err != nil {
		return err
	}
	wm, _ := c.track.watermark(id, ic.uidValidity)
	crit := []byte("UID " + strconv.FormatUint(uint64(wm)+1, 10) + ":* HEADER " + MarkHeader + " " + c.track.nonce)
	uids, err := ic.search(ctx, crit)
	if err != nil || len(uids) == 0 {
		return err
	}
	return ic.fetch(ctx, true, uidSet(uids), "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS ("+MarkHeader+")])", func(f *fetched) {
		if f.uid > wm {
			c.track.seen(id, headerValue(f.header, MarkHeader), time.Time{}, nil)
		}
	})
}

// recordLost counts every delivery still missing as lost.
func (t *tracker) recordLost() {
	sink := t.sink.Load()
	if sink == nil {
		return
	}
	n := t.next.Load()
	for seq := uint64(1); seq <= n; seq++ {
		e := t.entry(seq, false)
		if e == nil || e.want.Load() == 0 {
			continue
		}
		want, got := e.want.Load(), e.got.Load()
		for range want - min(got, want) {
			err := errors.New("a message accepted by the SMTP server never reached a recipient's INBOX (mark " +
				t.nonce + "." + strconv.FormatUint(seq, 10) + ")")
			(*sink).Event(evDeliver, time.Time{}, -1, 0, 0, driver.Lost, err)
		}
	}
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
