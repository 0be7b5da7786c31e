package pubsub

import (
	"sync"
	"sync/atomic"
)

// A stream is one publisher's messages on one subject, numbered 1, 2, 3...
// The registry knows every stream of the run and every confirmed
// subscription, so that it can tell at any time how many deliveries are
// expected (the backlog is expected minus delivered), and at the drain what
// each subscriber should have received.
//
// Exactness rests on two orderings. A publisher raises its stream's count
// before it writes a message (and lowers it again if the write fails), and
// a subscription counts as confirmed only when the broker has answered a
// request sent after it (PONG, SUBACK), after which the stream's count is
// read. So a message numbered above that count was written after the
// broker had the subscription, and must be delivered; one numbered at or
// below it may or may not be (it is "early" if it is).

// stream is one publisher on one subject.
type stream struct {
	id      uint32
	user    int   // the publishing user's ID
	subject int32 // the subject's number
	// sent is the highest number written (raised before the write).
	sent atomic.Uint64
	// pairs is how many confirmed subscriptions cover the subject, and
	// baseSum the sum of their bases: the stream's expected deliveries are
	// sent*pairs - baseSum.
	pairs   atomic.Int64
	baseSum atomic.Uint64
}

// registry holds the run's streams and subscription counts. Streams are
// added and subscriptions confirmed under mu; readers look streams up by id
// without locking (a copy-on-write slice).
type registry struct {
	mu        sync.Mutex
	streams   atomic.Pointer[[]*stream]
	bySubject map[int32][]*stream
	subsOn    map[int32]int // confirmed subscriptions of one subject
	subsAll   int           // confirmed subscriptions covering every subject
	subjects  int
	// frozen is what ended subscriptions expected (their expectations no
	// longer grow with the streams).
	frozen atomic.Uint64
}

func newRegistry(subjects int) *registry {
	g := &registry{bySubject: map[int32][]*stream{}, subsOn: map[int32]int{}, subjects: subjects}
	g.streams.Store(&[]*stream{})
	return g
}

// addStream registers a new stream of user on subject. Every subscription
// confirmed before it expects all its messages.
func (g *registry) addStream(user int, subject int32) *stream {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := *g.streams.Load()
	st := &stream{id: uint32(len(old)), user: user, subject: subject}
	st.pairs.Store(int64(g.subsOn[subject] + g.subsAll))
	next := make([]*stream, len(old)+1)
	copy(next, old)
	next[len(old)] = st
	g.streams.Store(&next)
	g.bySubject[subject] = append(g.bySubject[subject], st)
	return st
}

// stream returns the stream with id, or nil (a message from another
// process, or not from throng).
func (g *registry) stream(id uint32) *stream {
	all := *g.streams.Load()
	if int(id) < len(all) {
		return all[id]
	}
	return nil
}

// coverage is the set of subjects a subscription covers.
type coverage struct {
	all      bool
	subjects []int32 // when not all
}

// confirm counts a subscription the broker has confirmed, and returns the
// tracks of the streams that already exist, each based on its count now.
func (g *registry) confirm(cov coverage) []track {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tracks []track
	add := func(st *stream) {
		base := st.sent.Load()
		st.pairs.Add(1)
		st.baseSum.Add(base)
		tracks = append(tracks, newTrack(st.id, base))
	}
	if cov.all {
		g.subsAll++
		for _, st := range *g.streams.Load() {
			add(st)
		}
		return tracks
	}
	for _, s := range cov.subjects {
		g.subsOn[s]++
		for _, st := range g.bySubject[s] {
			add(st)
		}
	}
	return tracks
}

// release ends a confirmed subscription (its connection broke): each of
// its tracks stops expecting at the stream's count now. tracks must hold
// one track for every stream of the coverage. With atHi (the user
// disconnected on purpose, after its last delivery was read), each track
// stops at the highest number it received instead: what was still in
// flight when the user left is not expected of it, while gaps below are
// still lost.
func (g *registry) release(cov coverage, tracks []track, atHi bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cov.all {
		g.subsAll--
	} else {
		for _, s := range cov.subjects {
			g.subsOn[s]--
		}
	}
	all := *g.streams.Load()
	for i := range tracks {
		t := &tracks[i]
		if int(t.stream) >= len(all) || t.closed {
			continue
		}
		st := all[t.stream]
		t.end, t.closed = st.sent.Load(), true
		if atHi {
			t.end = min(t.end, t.hi)
		}
		if t.end > t.hi {
			t.tail = t.end - t.hi
		}
		st.pairs.Add(-1)
		st.baseSum.Add(^(t.base - 1))
		if t.end > t.base {
			g.frozen.Add(t.end - t.base)
		}
	}
}

// covered returns the streams on the subjects of cov.
func (g *registry) covered(cov coverage) []*stream {
	if cov.all {
		return *g.streams.Load()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*stream
	for _, s := range cov.subjects {
		out = append(out, g.bySubject[s]...)
	}
	return out
}

// expected returns how many deliveries the confirmed subscriptions expect
// of everything published so far.
func (g *registry) expected() uint64 {
	n := g.frozen.Load()
	for _, st := range *g.streams.Load() {
		// Read baseSum first: a confirmation in between only raises both.
		base := st.baseSum.Load()
		pairs := st.pairs.Load()
		if e := st.sent.Load() * uint64(pairs); e > base {
			n += e - base
		}
	}
	return n
}

// published returns how many messages were written in all.
func (g *registry) published() uint64 {
	var n uint64
	for _, st := range *g.streams.Load() {
		n += st.sent.Load()
	}
	return n
}
