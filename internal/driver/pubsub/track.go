package pubsub

// Sequence accounting: each subscriber keeps one track per stream it is
// owed (a publisher on a subject it subscribed to). A track knows which
// numbers are owed (those published after the subscription was confirmed,
// until the user leaves by its own op disconnect), which arrived, and how:
// first time and in order, late (after a higher number: out of order),
// again (duplicate), or before the subscription (early, not owed). What
// never arrived is computed at the drain from the stream's final count, so
// a broker's backlog is never taken for loss.
//
// A connection the broker, the network or a dead-connection check broke
// does not end what is owed: the subscriber reconnects and goes on owing
// every number. What never arrived is then either lost while connected or
// missed while disconnected. The second is what an outage gap holds: the
// numbers after the last one received before the break and before the
// first one received after it (the stream's last when none came); each
// gap names the outage (the run's window of broken connections) during
// which it opened.

// window is how many numbers below the highest one received a track still
// tells apart as late or duplicate. An arrival further back is counted late
// (a gap it fills), and any excess this causes is moved to duplicates when
// the track is settled, so the totals stay consistent.
const window = 256

// arrival is how a message arrived, for its track.
type arrival uint8

const (
	inOrder   arrival = iota // the highest number so far (gaps before it are pending)
	late                     // fills a gap below the highest number: out of order
	duplicate                // a number already received
	early                    // published before the subscription was confirmed: not expected
)

// track is one subscriber's accounting of one stream. It is used by one
// goroutine at a time (the subscriber's reader, or the drain after it),
// under its endpoint's lock.
type track struct {
	st    *stream
	base  uint64 // numbers up to base were published before the subscription
	hi    uint64 // highest number received, ≥ base
	got   uint64 // distinct expected numbers received
	late  uint64 // of which arrived out of order
	dup   uint64 // extra copies
	early uint64 // numbers ≤ base received
	// end, once ended, is the last number owed: the user left (op
	// disconnect).
	end   uint64
	ended bool
	// pending: the base is not known yet (a stream of another process,
	// whose count at the confirmation that process has not told yet; see
	// control.go). Arrivals are counted as if the base were 0; pmin is the
	// lowest number that arrived meanwhile.
	pending bool
	pmin    uint64
	// gaps are the outage gaps (rare: only after a broken connection).
	gaps []outageGap
	bits [window / 64]uint64
}

// outageGap holds the numbers (from, to] owed while the subscriber was
// disconnected; open until the first number above from arrives (to is
// then the one before it). got counts numbers inside that still arrived
// (a broker that kept the session, or reordering).
type outageGap struct {
	from, to uint64
	open     bool
	outage   int32 // index of the run's outage during which it opened
	got      uint64
}

// newTrack starts the accounting of stream st for a subscription confirmed
// when base numbers of the stream had been published.
func newTrack(st *stream, base uint64) track {
	return track{st: st, base: base, hi: base}
}

// add counts the arrival of number seq. It does not allocate.
func (t *track) add(seq uint64) arrival {
	switch {
	case seq <= t.base:
		t.early++
		return early
	case seq > t.hi:
		if n := len(t.gaps); n > 0 && t.gaps[n-1].open {
			t.gaps[n-1].to, t.gaps[n-1].open = seq-1, false
		}
		t.shift(seq - t.hi)
		t.hi = seq
		t.bits[0] |= 1
		t.got++
		if t.pending && (t.pmin == 0 || seq < t.pmin) {
			t.pmin = seq
		}
		return inOrder
	}
	d := t.hi - seq
	if d < window {
		w, b := d/64, uint64(1)<<(d%64)
		if t.bits[w]&b != 0 {
			t.dup++
			return duplicate
		}
		t.bits[w] |= b
	}
	t.got++
	t.late++
	if t.pending && seq < t.pmin {
		t.pmin = seq
	}
	for i := range t.gaps {
		if g := &t.gaps[i]; !g.open && seq > g.from && seq <= g.to {
			g.got++
		}
	}
	return late
}

// shift moves the window up by n numbers: bit i (number hi-i) becomes bit
// i+n.
func (t *track) shift(n uint64) {
	if n >= window {
		t.bits = [window / 64]uint64{}
		return
	}
	words, bits := int(n/64), n%64
	for i := len(t.bits) - 1; i >= 0; i-- {
		var v uint64
		if j := i - words; j >= 0 {
			v = t.bits[j] << bits
			if bits != 0 && j > 0 {
				v |= t.bits[j-1] >> (64 - bits)
			}
		}
		t.bits[i] = v
	}
}

// settleBase ends the pending state with the base the stream's process
// told. When every arrival so far was numbered above it, the counts
// stand. When some were at or below it, which of them were owed is not
// known: the base becomes the highest that arrived (what is owed starts
// after it, so nothing is counted lost that was not owed) and they all
// count early. It returns how many arrivals became owed deliveries and
// how many early ones.
func (t *track) settleBase(base uint64) (delivered, early uint64) {
	t.pending = false
	if t.got == 0 || t.pmin > base {
		t.base, t.hi = base, max(t.hi, base)
		return t.got, 0
	}
	early = t.got
	t.early += t.got
	t.got, t.late = 0, 0
	t.base = max(base, t.hi)
	t.hi = t.base
	t.bits = [window / 64]uint64{}
	return 0, early
}

// openGap starts an outage gap: the connection broke during outage.
// Numbers after the highest received are owed while disconnected until one
// arrives again. A track with an open gap keeps it (a second break before
// anything arrived again).
func (t *track) openGap(outage int32) {
	if t.ended {
		return
	}
	if n := len(t.gaps); n > 0 && t.gaps[n-1].open {
		return
	}
	t.gaps = append(t.gaps, outageGap{from: t.hi, open: true, outage: outage})
}

// finish ends what the track is owed at last: the user left.
func (t *track) finish(last uint64) {
	if n := len(t.gaps); n > 0 && t.gaps[n-1].open {
		t.gaps[n-1].to, t.gaps[n-1].open = max(last, t.gaps[n-1].from), false
	}
	t.end, t.ended = max(last, t.base), true
}

// tally is the settled accounting of one track or a sum of them.
type tally struct {
	Expected   uint64 // numbers owed: published while subscribed
	Received   uint64 // distinct owed numbers received
	Lost       uint64 // owed, never received
	Duplicate  uint64
	OutOfOrder uint64
	Early      uint64 // received, published before the subscription
	// Missed is the part of Lost owed while the subscriber was
	// disconnected by a broken connection (an outage gap); the rest went
	// missing while it was connected.
	Missed uint64
	// Unresolved counts arrivals of a stream of another process that never
	// told its count at the subscription (it stopped answering): not
	// owed, counted nowhere else.
	Unresolved uint64
}

func (a *tally) add(b tally) {
	a.Expected += b.Expected
	a.Received += b.Received
	a.Lost += b.Lost
	a.Duplicate += b.Duplicate
	a.OutOfOrder += b.OutOfOrder
	a.Early += b.Early
	a.Missed += b.Missed
	a.Unresolved += b.Unresolved
}

// settle computes the track's tally when the stream's last number is last
// (its end when the user left), and calls missed with each outage's part
// of what was missed while disconnected.
func (t *track) settle(last uint64, missed func(outage int32, n uint64)) tally {
	if t.ended {
		last = t.end
	}
	if t.pending {
		return tally{Unresolved: t.got + t.dup, Early: t.early}
	}
	tl := tally{Received: t.got, Duplicate: t.dup, OutOfOrder: t.late, Early: t.early}
	if last > t.base {
		tl.Expected = last - t.base
	}
	if tl.Received > tl.Expected {
		// Arrivals beyond the window were taken for late ones, or numbers
		// above last arrived (they cannot): the excess are copies.
		tl.Duplicate += tl.Received - tl.Expected
		tl.Received = tl.Expected
	}
	tl.Lost = tl.Expected - tl.Received
	for _, g := range t.gaps {
		to := g.to
		if g.open {
			to = last
		}
		to, from := min(to, last), max(g.from, t.base)
		if to <= from {
			continue
		}
		n := to - from - min(g.got, to-from)
		n = min(n, tl.Lost-tl.Missed)
		tl.Missed += n
		if missed != nil && n > 0 {
			missed(g.outage, n)
		}
	}
	return tl
}
