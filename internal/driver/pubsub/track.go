package pubsub

// Sequence accounting: each subscriber keeps one track per stream it
// receives (a publisher on a subject it subscribed to). A track knows which
// numbers it expects (those published after the subscription was
// confirmed), which arrived, and how: first time and in order, late (after
// a higher number: out of order), again (duplicate), or before the
// subscription (early, not expected). What never arrived is computed at the
// drain from the stream's final count, so a broker's backlog is never taken
// for loss.

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
// goroutine at a time (the subscriber's reader, or the drain after it).
type track struct {
	stream uint32
	base   uint64 // numbers up to base were published before the subscription
	hi     uint64 // highest number received, ≥ base
	got    uint64 // distinct expected numbers received
	late   uint64 // of which arrived out of order
	dup    uint64 // extra copies
	early  uint64 // numbers ≤ base received
	// end, once closed, is the stream's count when the subscription ended
	// (its connection broke): numbers above it are not expected.
	end    uint64
	closed bool
	tail   uint64 // numbers above hi up to end when it closed: lost in the break
	bits   [window / 64]uint64
}

// newTrack starts the accounting of stream for a subscription confirmed
// when base numbers of the stream had been published.
func newTrack(stream uint32, base uint64) track {
	return track{stream: stream, base: base, hi: base}
}

// add counts the arrival of number seq. It does not allocate.
func (t *track) add(seq uint64) arrival {
	switch {
	case seq <= t.base:
		t.early++
		return early
	case seq > t.hi:
		t.shift(seq - t.hi)
		t.hi = seq
		t.bits[0] |= 1
		t.got++
		return inOrder
	}
	d := t.hi - seq
	if d >= window {
		t.got++
		t.late++
		return late
	}
	w, b := d/64, uint64(1)<<(d%64)
	if t.bits[w]&b != 0 {
		t.dup++
		return duplicate
	}
	t.bits[w] |= b
	t.got++
	t.late++
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

// tally is the settled accounting of one track or a sum of them.
type tally struct {
	Expected   uint64 // numbers published while subscribed
	Received   uint64 // distinct expected numbers received
	Lost       uint64 // expected, never received
	Duplicate  uint64
	OutOfOrder uint64
	Early      uint64 // received, published before the subscription
	// Outage is the part of Lost that was in flight when the subscriber's
	// connection broke (a broker restart, a slow consumer cut off); the
	// rest went missing while it was connected.
	Outage uint64
}

func (a *tally) add(b tally) {
	a.Expected += b.Expected
	a.Received += b.Received
	a.Lost += b.Lost
	a.Duplicate += b.Duplicate
	a.OutOfOrder += b.OutOfOrder
	a.Early += b.Early
	a.Outage += b.Outage
}

// settle computes the track's tally when the stream's last number is last.
func (t *track) settle(last uint64) tally {
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
	tl.Outage = min(t.tail, tl.Lost)
	return tl
}
