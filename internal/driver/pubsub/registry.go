package pubsub

import (
	"maps"
	"sync"
	"sync/atomic"
)

// A stream is one publisher's messages on one subject, numbered 1, 2, 3...
// The registry knows every stream this process has heard of — its own
// publishers' and, in a distributed run, those of the other segments — and
// every confirmed subscription, so that it can tell at any time how many
// deliveries are owed (the backlog is owed minus delivered), and at the
// drain what each subscriber should have received.
//
// Exactness rests on two orderings. A publisher raises its stream's count
// before it writes a message (and lowers it again if the write fails), and
// a subscription counts as confirmed only when the broker has answered a
// request sent after it (PONG, SUBACK), after which the stream's count is
// read. So a message numbered above that count was written after the
// broker had the subscription, and must be delivered; one numbered at or
// below it may or may not be (it is "early" if it is). A stream of another
// process is counted there: its count is read when that process answers a
// probe sent after the confirmation (see control.go), which is later still,
// so the same holds.

// stream is one publisher on one subject.
type stream struct {
	key     streamKey
	slot    uint32 // its index in this process's registry: tracks are kept by it
	subject int32
	local   bool // published by this process
	// sent is the highest number written (raised before the write) of a
	// local stream; of another process's, the highest count it announced.
	sent atomic.Uint64
	// pairs is how many confirmed subscriptions expect the stream and
	// baseSum the sum of their bases: the stream's expected deliveries
	// are sent*pairs - baseSum.
	pairs   atomic.Int64
	baseSum atomic.Uint64
}

// registry holds the run's streams and subscription counts. Streams are
// added and subscriptions confirmed under mu; readers look streams up
// without locking (copy-on-write tables).
type registry struct {
	mu        sync.Mutex
	slots     atomic.Pointer[[]*stream]
	byKey     atomic.Pointer[map[streamKey]*stream]
	bySubject map[int32][]*stream
	// subsOn and subsAll count the confirmed subscriptions of one subject
	// and of every subject: a local stream that begins later is owed to
	// them from its first number. remOn and remAll count those whose
	// probe was answered by every other process (see control.go), to
	// which a stream of another process heard of later is owed likewise.
	subsOn  map[int32]int
	subsAll int
	remOn   map[int32]int
	remAll  int
	// frozen is what ended subscriptions expected (their expectations no
	// longer grow with the streams).
	frozen atomic.Uint64
}

func newRegistry() *registry {
	g := &registry{bySubject: map[int32][]*stream{}, subsOn: map[int32]int{}, remOn: map[int32]int{}}
	g.slots.Store(&[]*stream{})
	g.byKey.Store(&map[streamKey]*stream{})
	return g
}

// local returns the stream of user on subject published by this process,
// registering it the first time. Every subscription confirmed before then
// expects all its messages.
func (g *registry) local(user int, subject int32) *stream {
	return g.add(keyOf(user, subject), true)
}

// learn returns the stream key of another process, registering it the
// first time (a message arrived, or its process announced it).
func (g *registry) learn(key streamKey) *stream {
	if st := g.lookup(key); st != nil {
		return st
	}
	return g.add(key, false)
}

func (g *registry) add(key streamKey, local bool) *stream {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := (*g.byKey.Load())[key]; st != nil {
		st.local = st.local || local
		return st
	}
	old := *g.slots.Load()
	st := &stream{key: key, slot: uint32(len(old)), subject: key.subject(), local: local}
	if local {
		st.pairs.Store(int64(g.subsOn[st.subject] + g.subsAll))
	} else {
		st.pairs.Store(int64(g.remOn[st.subject] + g.remAll))
	}
	next := make([]*stream, len(old)+1)
	copy(next, old)
	next[len(old)] = st
	g.slots.Store(&next)
	m := maps.Clone(*g.byKey.Load())
	m[key] = st
	g.byKey.Store(&m)
	g.bySubject[st.subject] = append(g.bySubject[st.subject], st)
	return st
}

// lookup returns the stream key, or nil when it is not known here. It
// does not lock or allocate.
func (g *registry) lookup(key streamKey) *stream { return (*g.byKey.Load())[key] }

// all returns every stream known.
func (g *registry) all() []*stream { return *g.slots.Load() }

// coverage is the set of subjects a subscription covers.
type coverage struct {
	all      bool
	subjects []int32 // when not all
}

func (cov coverage) has(subject int32) bool {
	if cov.all {
		return true
	}
	for _, s := range cov.subjects {
		if s == subject {
			return true
		}
	}
	return false
}

// confirm counts a subscription the broker has confirmed, and returns the
// tracks of the local streams that exist, each based on its count now.
// Other processes' streams are resolved later (resolve).
func (g *registry) confirm(cov coverage) []track {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cov.all {
		g.subsAll++
	} else {
		for _, s := range cov.subjects {
			g.subsOn[s]++
		}
	}
	return g.based(cov)
}

// resolve counts a subscription whose probe every other process answered,
// and returns the tracks of the other processes' streams known now, each
// based on its last announced count, which was read after the probe. The
// caller counts each track (count) once its base is settled.
func (g *registry) resolve(cov coverage) []track {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cov.all {
		g.remAll++
	} else {
		for _, s := range cov.subjects {
			g.remOn[s]++
		}
	}
	var tracks []track
	for _, st := range g.onSubjects(cov) {
		if !st.local {
			tracks = append(tracks, newTrack(st, st.sent.Load()))
		}
	}
	return tracks
}

// based returns a track for each local stream on the subjects of cov, each
// based at the stream's count now, and counts it. Call with mu held.
func (g *registry) based(cov coverage) []track {
	var tracks []track
	for _, st := range g.onSubjects(cov) {
		if !st.local {
			continue
		}
		base := st.sent.Load()
		st.pairs.Add(1)
		st.baseSum.Add(base)
		tracks = append(tracks, newTrack(st, base))
	}
	return tracks
}

// count counts a track whose base is settled: from then on its stream's
// expected deliveries include it.
func (g *registry) count(t *track) {
	t.st.pairs.Add(1)
	t.st.baseSum.Add(t.base)
}

// release ends a confirmed subscription: the user disconnected (op
// disconnect). Each track stops expecting at its end (set by the caller).
// tracks must hold one track for every stream of the coverage known;
// remCovs are the coverages resolved against the other processes' streams.
func (g *registry) release(cov coverage, remCovs []coverage, tracks []track) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cov.all {
		g.subsAll--
	} else {
		for _, s := range cov.subjects {
			g.subsOn[s]--
		}
	}
	for _, rc := range remCovs {
		if rc.all {
			g.remAll--
			continue
		}
		for _, s := range rc.subjects {
			g.remOn[s]--
		}
	}
	for i := range tracks {
		t := &tracks[i]
		if t.pending || !t.ended {
			continue // never counted
		}
		t.st.pairs.Add(-1)
		t.st.baseSum.Add(^(t.base - 1))
		if t.end > t.base {
			g.frozen.Add(t.end - t.base)
		}
	}
}

// covered returns the streams on the subjects of cov.
func (g *registry) covered(cov coverage) []*stream {
	if cov.all {
		return g.all()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.onSubjects(cov)
}

// onSubjects returns the streams on the subjects of cov. Call with mu held.
func (g *registry) onSubjects(cov coverage) []*stream {
	if cov.all {
		return g.all()
	}
	var out []*stream
	for _, s := range cov.subjects {
		out = append(out, g.bySubject[s]...)
	}
	return out
}

// expected returns how many deliveries the confirmed subscriptions expect
// of everything published so far (of another process's streams, of what
// it announced).
func (g *registry) expected() uint64 {
	n := g.frozen.Load()
	for _, st := range g.all() {
		// Read baseSum first: a confirmation in between only raises both.
		base := st.baseSum.Load()
		pairs := st.pairs.Load()
		if e := st.sent.Load() * uint64(max(pairs, 0)); e > base {
			n += e - base
		}
	}
	return n
}

// published returns how many messages this process's publishers wrote.
func (g *registry) published() uint64 {
	var n uint64
	for _, st := range g.all() {
		if st.local {
			n += st.sent.Load()
		}
	}
	return n
}
