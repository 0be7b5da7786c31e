package mail

import (
	"sort"
	"time"
)

// Message flags, as bits. flagGone is not an IMAP flag: it marks a
// synthesised message as expunged.
const (
	flagSeen uint8 = 1 << iota
	flagAnswered
	flagFlagged
	flagDeleted
	flagDraft
	flagGone uint8 = 1 << 7
)

var flagNames = []struct {
	bit  uint8
	name string
}{{flagSeen, `\Seen`}, {flagAnswered, `\Answered`}, {flagFlagged, `\Flagged`}, {flagDeleted, `\Deleted`}, {flagDraft, `\Draft`}}

// recipe generates the messages of a synthesised folder: message j
// (0-based) is gen(dst, j) appended to dst, the same bytes every time.
// A recipe is never modified once made, so its messages are read without
// a lock, and a message copied elsewhere keeps its recipe.
type recipe struct {
	count int
	date  time.Time // internal date of every message
	flags uint8     // flags every message starts with
	gen   func(dst []byte, j int) []byte
}

// body is where a message's bytes come from: stored data, or message j of
// a recipe. Either is immutable, so a body is read without a lock.
type body struct {
	data []byte
	src  *recipe
	j    int
}

// bytes returns the message's bytes: the stored data as it is, or the
// message generated into dst[:0].
func (b body) bytes(dst []byte) []byte {
	if b.src == nil {
		return b.data
	}
	return b.src.gen(dst[:0], b.j)
}

// message is one stored message. Its body is never modified, so one
// delivery shares it between all its recipients.
type message struct {
	uid   uint32
	flags uint8
	date  time.Time
	body
}

// mailbox is one folder: first the messages of its recipe (UIDs 1 to
// recipe.count, none of them stored), then the stored ones. It is
// guarded by its account's mutex.
type mailbox struct {
	name        string
	uidValidity uint32
	uidNext     uint32
	// recipe, when not nil, holds the synthesised messages; pre is their
	// flags by UID-1 (with flagGone once expunged), nil while none has
	// changed, and live is how many are not gone.
	recipe   *recipe
	pre      []uint8
	live     int
	msgs     []*message // stored, by UID, every UID above recipe.count
	version  uint64     // bumped at every change
	watchers map[chan struct{}]struct{}
}

// ref names one message of a mailbox: a stored one (m), or, with m nil,
// the synthesised message uid.
type ref struct {
	uid uint32
	m   *message
}

func (b *mailbox) changed() {
	b.version++
	for ch := range b.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// synthetic is the number of UIDs the recipe holds (gone ones included).
func (b *mailbox) synthetic() uint32 {
	if b.recipe == nil {
		return 0
	}
	return uint32(b.recipe.count)
}

// count is the number of messages in the mailbox.
func (b *mailbox) count() int { return b.live + len(b.msgs) }

// lookup returns the message whose UID is uid.
func (b *mailbox) lookup(uid uint32) (ref, bool) {
	if uid >= 1 && uid <= b.synthetic() {
		return ref{uid: uid}, b.preFlags(uid)&flagGone == 0
	}
	i := sort.Search(len(b.msgs), func(i int) bool { return b.msgs[i].uid >= uid })
	if i < len(b.msgs) && b.msgs[i].uid == uid {
		return ref{uid: uid, m: b.msgs[i]}, true
	}
	return ref{}, false
}

// each calls fn for every message with a UID of at least from, in UID
// order, until fn returns false.
func (b *mailbox) each(from uint32, fn func(ref) bool) {
	from = max(from, 1)
	if n := b.synthetic(); from <= n {
		for uid := from; uid <= n; uid++ {
			if b.preFlags(uid)&flagGone == 0 && !fn(ref{uid: uid}) {
				return
			}
		}
	}
	i := sort.Search(len(b.msgs), func(i int) bool { return b.msgs[i].uid >= from })
	for _, m := range b.msgs[i:] {
		if !fn(ref{uid: m.uid, m: m}) {
			return
		}
	}
}

func (b *mailbox) preFlags(uid uint32) uint8 {
	if b.pre == nil {
		return b.recipe.flags
	}
	return b.pre[uid-1]
}

// flags returns a message's flags.
func (b *mailbox) flags(r ref) uint8 {
	if r.m != nil {
		return r.m.flags
	}
	return b.preFlags(r.uid) &^ flagGone
}

// setFlags replaces a message's flags.
func (b *mailbox) setFlags(r ref, f uint8) {
	f &^= flagGone
	if r.m != nil {
		r.m.flags = f
		return
	}
	if b.pre == nil && f == b.recipe.flags {
		return
	}
	b.materialise()
	b.pre[r.uid-1] = f
}

// materialise gives every synthesised message its own flags byte.
func (b *mailbox) materialise() {
	if b.pre == nil {
		b.pre = make([]uint8, b.recipe.count)
		for i := range b.pre {
			b.pre[i] = b.recipe.flags
		}
	}
}

// date returns a message's internal date.
func (b *mailbox) date(r ref) time.Time {
	if r.m != nil {
		return r.m.date
	}
	return b.recipe.date
}

// body returns where a message's bytes come from.
func (b *mailbox) body(r ref) body {
	if r.m != nil {
		return r.m.body
	}
	return body{src: b.recipe, j: int(r.uid) - 1}
}

// add stores a message under the next UID.
func (b *mailbox) add(msg *message) {
	msg.uid = b.uidNext
	b.uidNext++
	b.msgs = append(b.msgs, msg)
	b.changed()
}

// removeIf removes the messages for which drop is true and returns how
// many it removed.
func (b *mailbox) removeIf(drop func(ref) bool) int {
	n := 0
	for uid := uint32(1); uid <= b.synthetic(); uid++ {
		if f := b.preFlags(uid); f&flagGone == 0 && drop(ref{uid: uid}) {
			b.materialise()
			b.pre[uid-1] |= flagGone
			b.live--
			n++
		}
	}
	kept := b.msgs[:0]
	for _, m := range b.msgs {
		if drop(ref{uid: m.uid, m: m}) {
			n++
			continue
		}
		kept = append(kept, m)
	}
	clear(b.msgs[len(kept):])
	b.msgs = kept
	if n > 0 {
		b.changed()
	}
	return n
}
