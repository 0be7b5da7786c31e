package mail

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// tracker follows every message sent in a repetition until each of its
// recipients has seen it, per recipient: a message to three users (lists
// expanded) owes three deliveries. A copy seen in a mailbox that is none
// of its recipients' is misdelivered; a second copy in a recipient's
// mailbox is a duplicate; an owed delivery never seen is lost. Copies are
// told apart by their mailbox position (UIDVALIDITY and UID), so a message
// looked at twice is never counted twice. Everything is lock-free on the
// hot path (a delivery); misdelivered and duplicated copies take a lock.
type tracker struct {
	c     *Config    // names users and lists in messages
	mu    sync.Mutex // setUsers
	users atomic.Pointer[[]recipient]
	gen   atomic.Pointer[generation]
	sink  atomic.Pointer[driver.Sink]
}

// recipient is a user's delivery state. The watermark and mine outlive a
// repetition; owed and got are the current generation's.
type recipient struct {
	owed  atomic.Int32  // deliveries owed to this user
	got   atomic.Int32  // deliveries seen
	mark  atomic.Uint64 // UIDVALIDITY<<32 | highest INBOX UID already looked at
	known atomic.Bool   // mark is set (after population or a first search)
	mine  atomic.Bool   // prepared or opened by this process: Drain looks at its mailbox
}

// generation is one repetition's messages: a fresh nonce (so a message of
// an earlier repetition left in a mailbox is never taken for one of this
// one) and sequence numbers from 1.
type generation struct {
	nonce  string
	next   atomic.Uint64
	mu     sync.Mutex // allocating chunks; strays
	chunks [1 << 16]atomic.Pointer[[chunkSize]sentMsg]
	strays map[strayKey]*stray
}

const chunkSize = 4096

// sentMsg is one submitted message.
type sentMsg struct {
	sub int64        // submission began, unix nanoseconds (written before rc is published)
	at  atomic.Int64 // acceptance (the 250 after DATA), unix nanoseconds (0: not yet)
	rc  atomic.Pointer[rcptSet]
}

// rcptSet is whom a message owes deliveries to, and what became of them:
// about 12 bytes per recipient (lists expanded), kept until the
// repetition ends.
type rcptSet struct {
	users []int32         // the run's users it reaches, sorted, distinct
	first []atomic.Uint64 // per user: UIDVALIDITY<<32|UID of the first copy seen (0: none yet)
	lists []int32         // the run's lists among its recipients, for messages
	// open: some recipient reaches mailboxes this run cannot account
	// for (an address that is neither a user of the run nor one of its
	// lists, or a list with members outside the run).
	open bool
}

// strayKey names a message's extra copies in one mailbox.
type strayKey struct {
	seq  uint64
	user int32
}

// stray is the extra copies (misdelivered, or duplicates) of one message
// seen in one mailbox: their UIDs under one UIDVALIDITY.
type stray struct {
	validity uint32
	uids     []uint32
}

func newTracker(c *Config) *tracker {
	t := &tracker{c: c}
	t.gen.Store(newGeneration())
	return t
}

func newGeneration() *generation {
	var b [6]byte
	rand.Read(b[:])
	return &generation{nonce: hex.EncodeToString(b[:]), strays: map[strayKey]*stray{}}
}

// begin starts a new generation (a repetition): no message is owed.
func (t *tracker) begin() {
	t.gen.Store(newGeneration())
	if u := t.users.Load(); u != nil {
		for i := range *u {
			(*u)[i].owed.Store(0)
			(*u)[i].got.Store(0)
		}
	}
}

// current is the generation messages are sent in.
func (t *tracker) current() *generation { return t.gen.Load() }

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

// totalUsers is the number of users in the plan (0 before any Open or
// Prepare).
func (t *tracker) totalUsers() int {
	if u := t.users.Load(); u != nil {
		return len(*u)
	}
	return 0
}

// claim notes that this process looks after user id's mailbox.
func (t *tracker) claim(id int) {
	if r := t.user(id); r != nil {
		r.mine.Store(true)
	}
}

// newMark reserves a sequence number for a message whose submission
// begins at sub, and returns it with its header value.
func (g *generation) newMark(sub time.Time) (uint64, string) {
	seq := g.next.Add(1)
	if e := g.entry(seq, true); e != nil {
		e.sub = sub.UnixNano()
	}
	return seq, g.nonce + "." + strconv.FormatUint(seq, 10)
}

func (g *generation) entry(seq uint64, alloc bool) *sentMsg {
	ci, i := seq/chunkSize, seq%chunkSize
	if ci >= uint64(len(g.chunks)) {
		return nil
	}
	ch := g.chunks[ci].Load()
	if ch == nil {
		if !alloc {
			return nil
		}
		g.mu.Lock()
		if ch = g.chunks[ci].Load(); ch == nil {
			ch = new([chunkSize]sentMsg)
			g.chunks[ci].Store(ch)
		}
		g.mu.Unlock()
	}
	return &ch[i]
}

// seq reads a mark header's value: this generation's message number.
func (g *generation) seq(value []byte) (uint64, bool) {
	n := len(g.nonce)
	if len(value) <= n+1 || string(value[:n]) != g.nonce || value[n] != '.' {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(value[n+1:]), 10, 64)
	return seq, err == nil
}

// expect records, before DATA, that message seq owes a delivery to each
// user its accepted SMTP recipients reach (a fast server may deliver it
// before its answer to DATA is read).
func (t *tracker) expect(g *generation, seq uint64, r reach) {
	e := g.entry(seq, false)
	if e == nil {
		return
	}
	rc := &rcptSet{users: make([]int32, 0, len(r.users)), open: r.open}
	for _, u := range r.users {
		rc.users = append(rc.users, int32(u))
	}
	for _, k := range r.lists {
		rc.lists = append(rc.lists, int32(k))
	}
	slices.Sort(rc.users)
	rc.users = slices.Compact(rc.users)
	rc.first = make([]atomic.Uint64, len(rc.users))
	for _, u := range rc.users {
		if r := t.user(int(u)); r != nil {
			r.owed.Add(1)
		}
	}
	e.rc.Store(rc)
}

// accepted records that the SMTP server accepted message seq at time at.
func (g *generation) accepted(seq uint64, at time.Time) {
	if e := g.entry(seq, false); e != nil {
		e.at.Store(at.UnixNano())
	}
}

// cancel forgets message seq: DATA failed, nothing is owed (a copy that
// arrives anyway is not counted).
func (t *tracker) cancel(g *generation, seq uint64) {
	e := g.entry(seq, false)
	if e == nil {
		return
	}
	if rc := e.rc.Swap(nil); rc != nil {
		for _, u := range rc.users {
			if r := t.user(int(u)); r != nil {
				r.owed.Add(-1)
			}
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

// copyAt is a message's place in a mailbox: UIDVALIDITY<<32 | UID.
func copyAt(validity, uid uint32) uint64 { return uint64(validity)<<32 | uint64(uid) }

// seen records that user's INBOX holds, at place at (copyAt), the message
// whose mark header is value, looked at at time now (zero: found at a
// log-on or by Drain, no latency). It ignores marks of other runs and
// generations, and a copy already counted. The first copy in a
// recipient's INBOX is a delivery; another copy there is a duplicate; a
// copy in any other user's INBOX is misdelivered. A delivery carries the
// bytes traffic gives, called only when it is recorded (nil: none): the
// message's size would be bytes that never crossed the network, and the
// FETCH that saw it is counted in its action unless the IDLE watcher made
// it.
func (t *tracker) seen(user int, value []byte, at uint64, now time.Time, traffic func() (in, out int64)) {
	g := t.gen.Load()
	seq, ok := g.seq(value)
	if !ok {
		return
	}
	e := g.entry(seq, false)
	if e == nil {
		return
	}
	rc := e.rc.Load()
	if rc == nil {
		return
	}
	i, recipient := slices.BinarySearch(rc.users, int32(user))
	if recipient && rc.first[i].CompareAndSwap(0, at) {
		if r := t.user(user); r != nil {
			r.got.Add(1)
		}
		t.delivered(e, now, traffic)
		return
	}
	if recipient {
		if first := rc.first[i].Load(); first == at || first>>32 != at>>32 {
			return // the same copy again, or a mailbox renumbered since
		}
	}
	if !g.stray(seq, user, at) {
		return
	}
	ev, class, what := evMisdeliver, driver.Misdelivered, misdelivered
	if recipient {
		ev, class, what = evDuplicate, driver.Duplicate, duplicated
	}
	t.event(ev, e, -1, 0, 0, class, &deliveryErr{what: what, t: t, g: g, seq: seq, user: user, rc: rc})
}

// stray reports whether the copy at place at is a new extra copy of
// message seq in user's INBOX, and notes it.
func (g *generation) stray(seq uint64, user int, at uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := strayKey{seq, int32(user)}
	s := g.strays[k]
	switch {
	case s == nil:
		g.strays[k] = &stray{validity: uint32(at >> 32), uids: []uint32{uint32(at)}}
		return true
	case s.validity != uint32(at>>32) || slices.Contains(s.uids, uint32(at)):
		return false
	}
	s.uids = append(s.uids, uint32(at))
	return true
}

// delivered records a delivery of e seen at now (zero: untimed).
func (t *tracker) delivered(e *sentMsg, now time.Time, traffic func() (in, out int64)) {
	if t.sink.Load() == nil {
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
	t.event(evDeliver, e, lat, in, out, driver.OK, nil)
}

// event records one event of message e: its cause is the message's
// submission, so it counts in the phase the message was sent in.
func (t *tracker) event(ev int, e *sentMsg, lat time.Duration, in, out int64, class driver.Class, err error) {
	if sink := t.sink.Load(); sink != nil {
		(*sink).Event(ev, time.Unix(0, e.sub), lat, in, out, class, err)
	}
}

// owedTotal is the number of deliveries owed so far.
func (t *tracker) owedTotal() int {
	n := 0
	if u := t.users.Load(); u != nil {
		for i := range *u {
			n += int((*u)[i].owed.Load())
		}
	}
	return n
}

// pending lists the users still owed deliveries.
func (t *tracker) pending() []int {
	u := t.users.Load()
	if u == nil {
		return nil
	}
	var out []int
	for i := range *u {
		r := &(*u)[i]
		if r.got.Load() < r.owed.Load() {
			out = append(out, i)
		}
	}
	return out
}

// watched lists the mailboxes Drain looks at: the users still owed
// deliveries first, then every other user of this process.
func (t *tracker) watched() []int {
	u := t.users.Load()
	if u == nil {
		return nil
	}
	out := t.pending()
	for i := range *u {
		r := &(*u)[i]
		if r.mine.Load() && r.got.Load() >= r.owed.Load() {
			out = append(out, i)
		}
	}
	return out
}

// recordLost counts every owed delivery still missing as lost, one event
// per recipient, in the phase its message was sent in.
func (t *tracker) recordLost() {
	if t.sink.Load() == nil {
		return
	}
	g := t.gen.Load()
	n := g.next.Load()
	for seq := uint64(1); seq <= n; seq++ {
		e := g.entry(seq, false)
		if e == nil {
			continue
		}
		rc := e.rc.Load()
		if rc == nil {
			continue
		}
		for i := range rc.users {
			if rc.first[i].Load() == 0 {
				t.event(evDeliver, e, -1, 0, 0, driver.Lost,
					&deliveryErr{what: lost, t: t, g: g, seq: seq, user: int(rc.users[i]), rc: rc})
			}
		}
	}
}

// What became of a copy, for deliveryErr.
const (
	lost = iota
	misdelivered
	duplicated
)

// deliveryErr is the sample message of a lost, misdelivered or duplicated
// delivery, written only when a result keeps it.
type deliveryErr struct {
	what int
	t    *tracker
	g    *generation
	seq  uint64
	user int
	rc   *rcptSet
}

func (e *deliveryErr) Error() string {
	c := e.t.c
	mark := e.g.nonce + "." + strconv.FormatUint(e.seq, 10)
	var to []string
	for _, u := range e.rc.users[:min(3, len(e.rc.users))] {
		to = append(to, c.UserName(int(u)))
	}
	sent := "to " + strings.Join(to, ", ")
	if n := len(e.rc.users) - len(to); n > 0 {
		sent += " and " + strconv.Itoa(n) + " more"
	}
	if len(e.rc.users) == 0 {
		sent = "to no user of the run"
	}
	if len(e.rc.lists) > 0 {
		ls := c.lists(e.t.totalUsers())
		var names []string
		for _, k := range e.rc.lists {
			if int(k) < len(ls.addrs) {
				names = append(names, ls.addrs[k])
			}
		}
		sent += " through " + strings.Join(names, ", ")
	}
	user := c.UserName(e.user)
	switch e.what {
	case lost:
		return "message " + mark + " (" + sent + ") was accepted by the SMTP server and never reached " + user + "'s INBOX"
	case duplicated:
		return "message " + mark + " (" + sent + ") reached " + user + "'s INBOX more than once"
	}
	s := "message " + mark + " (" + sent + ") was found in " + user + "'s INBOX, and " + user + " is none of its recipients"
	switch {
	case e.rc.open:
		s += " as this run knows them: some of its recipients are addresses or list members outside the run (describe the server's lists in mail.lists)"
	case len(e.rc.lists) > 0:
		s += " (it went to distribution lists: if the server's lists differ from the run's, describe them in mail.lists)"
	}
	return s
}
