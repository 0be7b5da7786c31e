package pubsub

import (
	"slices"
	"sync"
)

// subscription is what one user's subscriptions are owed, across the
// connections it takes: it begins when the broker first confirms a
// subscription of the user, goes on over a connection the broker or the
// network broke (the session reconnects and asks for every filter again),
// and ends only when the user leaves by its own op disconnect (or at the
// drain). Every endpoint that feeds it uses its lock.
type subscription struct {
	mu   *sync.Mutex
	r    *run
	user int
	// cov is what it covers; filters are the subjects or filters asked
	// (the group's and op subscribe's), asked again after a break.
	cov     coverage
	filters []string
	tracks  []track
	trackOf []int32 // stream slot -> index in tracks + 1
	early   uint64  // deliveries of streams it does not expect
	ended   bool    // the user left (op disconnect)
	// dist is a distributed run's state (see control.go): nil in one
	// process.
	dist *subDist
	// outage is the run's outage of the last break, until the connection
	// is confirmed again (-1: connected).
	outage int32
	kept   bool // listed in the run's subscriptions (guarded by the run's mu)
}

// subDist is what a subscription of a distributed run keeps: pend are
// coverages confirmed whose probe not every other process has answered
// yet; remCovs those answered.
type subDist struct {
	pend    []pendingCov
	remCovs []coverage
}

// pending reports whether some coverage awaits the other processes.
func (s *subscription) pending() bool { return s.dist != nil && len(s.dist.pend) > 0 }

// remCovs are the coverages resolved against the other processes'
// streams.
func (s *subscription) remCovs() []coverage {
	if s.dist == nil {
		return nil
	}
	return s.dist.remCovs
}

// pendingCov is a coverage confirmed after the probe's number was drawn:
// its streams of other processes are based once every other process has
// answered a probe at least that number.
type pendingCov struct {
	cov   coverage
	probe uint64
}

func newSubscription(r *run, user int, mu *sync.Mutex) *subscription {
	return &subscription{r: r, user: user, mu: mu, outage: -1}
}

// add starts owing the subjects of cov, which the broker has just
// confirmed: each local stream on them from its count now, those of the
// other processes from their counts once they answered (pending meanwhile).
// Call with mu held.
func (s *subscription) add(cov coverage, filters []string) {
	r := s.r
	for _, t := range r.reg.confirm(cov) {
		s.addTrack(t)
	}
	switch {
	case cov.all:
		s.cov = coverage{all: true}
	case !s.cov.all && len(s.cov.subjects) == 0:
		s.cov = cov // the first: shared, never changed in place
	default:
		s.cov = coverage{subjects: append(slices.Clip(s.cov.subjects), cov.subjects...)}
	}
	if s.filters == nil {
		s.filters = filters
	} else {
		s.filters = append(slices.Clip(s.filters), filters...)
	}
	if r.ctl == nil {
		return // one process: no stream of another to resolve
	}
	if s.dist == nil {
		s.dist = &subDist{}
	}
	s.dist.pend = append(s.dist.pend, pendingCov{cov: cov, probe: r.ctl.probe(s)})
}

// pendingOn reports whether a stream of another process on subject is
// still of unknown base.
func (s *subscription) pendingOn(subject int32) bool {
	if s.dist == nil {
		return false
	}
	for _, p := range s.dist.pend {
		if p.cov.has(subject) {
			return true
		}
	}
	return false
}

// resolve bases the streams of other processes of every coverage whose
// probe every other process has answered (answered is the lowest probe
// number they all answered). Call with mu held.
func (s *subscription) resolve(answered uint64) {
	r, d := s.r, s.dist
	if d == nil {
		return
	}
	keep := d.pend[:0]
	for _, p := range d.pend {
		if p.probe > answered {
			keep = append(keep, p)
			continue
		}
		for _, t := range r.reg.resolve(p.cov) {
			s.take(t)
		}
		d.remCovs = append(d.remCovs, p.cov)
	}
	clear(d.pend[len(keep):])
	d.pend = keep
	// A track of a stream heard of after the coverage was confirmed but
	// not announced by its process since began after that: base 0.
	for i := range s.tracks {
		if t := &s.tracks[i]; t.pending && !s.pendingOn(t.st.subject) {
			s.based(t, 0)
		}
	}
}

// take adds a track of a stream of another process whose base is now
// known, or settles the pending one the subscription already has. Call
// with mu held.
func (s *subscription) take(t track) {
	if old := s.lookup(t.st); old != nil {
		if old.pending {
			s.based(old, t.base)
		}
		return
	}
	s.r.reg.count(&t)
	s.addTrack(t)
}

// based settles the base of a pending track, counts it, and moves what
// arrived meanwhile to the run's deliveries or early ones.
func (s *subscription) based(t *track, base uint64) {
	delivered, early := t.settleBase(base)
	s.r.reg.count(t)
	s.r.stats.delivered.Add(delivered)
	s.r.stats.early.Add(early)
}

func (s *subscription) lookup(st *stream) *track {
	if int(st.slot) < len(s.trackOf) {
		if i := s.trackOf[st.slot]; i > 0 {
			return &s.tracks[i-1]
		}
	}
	return nil
}

func (s *subscription) addTrack(t track) *track {
	if s.outage >= 0 {
		t.openGap(s.outage)
	}
	s.tracks = append(s.tracks, t)
	if int(t.st.slot) >= len(s.trackOf) {
		grown := make([]int32, t.st.slot+1, max(int(t.st.slot)+1, 2*len(s.trackOf)))
		copy(grown, s.trackOf)
		s.trackOf = grown
	}
	s.trackOf[t.st.slot] = int32(len(s.tracks))
	return &s.tracks[len(s.tracks)-1]
}

// track returns the accounting of stream st, creating it (based at 0: the
// stream began after the subscription) when the stream is on a covered
// subject; nil for a stream the subscription does not expect. Call with mu
// held.
func (s *subscription) track(st *stream) *track {
	if t := s.lookup(st); t != nil {
		return t
	}
	if s.ended || !s.cov.has(st.subject) {
		// An ended subscription expects nothing of a stream that began
		// after the user left.
		return nil
	}
	t := newTrack(st, 0)
	t.pending = !st.local && s.pendingOn(st.subject)
	return s.addTrack(t)
}

// known makes sure every stream known on the covered subjects has its
// track. Call with mu held.
func (s *subscription) known() {
	for _, st := range s.r.reg.covered(s.cov) {
		s.track(st)
	}
}

// broke opens an outage gap on every track: the connection broke during
// the run's outage (see track.go). Call with mu held.
func (s *subscription) broke(outage int32) {
	if s.ended || outage < 0 {
		return
	}
	s.known()
	s.outage = outage
	for i := range s.tracks {
		s.tracks[i].openGap(outage)
	}
}

// restored marks the subscription confirmed again after a break: every
// stream it did not know of yet began during the outage, and is owed from
// its first number, missed while disconnected until one arrives. Call
// with mu held.
func (s *subscription) restored() {
	if s.outage >= 0 {
		s.known()
		s.outage = -1
	}
}

// leave ends what the subscription is owed: the user disconnected on
// purpose (op disconnect) after its reader stopped. Each track is owed up
// to the highest number it received (what was still in flight when the
// user left was never owed to it; gaps below are still lost); one in an
// outage gap (the user left while its connection was broken) up to the
// stream's count now. Call with mu held.
func (s *subscription) leave() {
	if s.ended {
		return
	}
	s.known()
	for i := range s.tracks {
		t := &s.tracks[i]
		last := t.hi
		if n := len(t.gaps); n > 0 && t.gaps[n-1].open {
			last = t.st.sent.Load()
		}
		t.finish(last)
	}
	s.ended = true
	s.r.reg.release(s.cov, s.remCovs(), s.tracks)
}

// settle computes the subscription's accounting against the streams'
// final counts, one tally per stream it was owed, and adds each outage's
// part of what was missed while disconnected to missed. Call with mu
// held, after the publishers stopped.
func (s *subscription) settle(missed []uint64) []streamTally {
	s.known()
	out := make([]streamTally, 0, len(s.tracks))
	for i := range s.tracks {
		t := &s.tracks[i]
		tl := t.settle(t.st.sent.Load(), func(o int32, n uint64) {
			if o >= 0 && int(o) < len(missed) {
				missed[o] += n
			}
		})
		out = append(out, streamTally{key: t.st.key, tally: tl})
	}
	return out
}

// streamTally is one subscriber's tally of one stream.
type streamTally struct {
	key streamKey
	tally
}
