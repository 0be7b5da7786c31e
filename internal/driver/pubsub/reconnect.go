package pubsub

import (
	"context"
	"hash/maphash"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// Reconnection: a connection the broker or the network broke (a broker
// restarted mid-run, a slow consumer cut off) is reconnected in the
// background with exponential back-off and jitter, so thousands of
// subscribers do not storm a broker that comes back. Every attempt is a
// "connect" event; a publish while its user is reconnecting fails at once
// (class dial) and consumes no sequence number.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// outage is a window during which at least one connection was broken:
// when (at: since the run began), how many connections broke in it, and
// (at the drain) how many owed deliveries were missed because of it.
type outage struct {
	start, end time.Time
	at         time.Duration
	conns      int
	missed     uint64
}

// redial reconnects the session until it succeeds, the user leaves or the
// run ends.
func (s *session) redial() {
	r := s.r
	// Attempts end with the user's context or the run.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	delay := backoffMin
	seed := maphash.Comparable(maphash.MakeSeed(), s.u.ID)
	for attempt := uint64(0); ; attempt++ {
		// ±25% jitter, different for every user and attempt.
		j := time.Duration((seed^attempt*0x9e3779b97f4a7c15)%512) * delay / 1024
		t := time.NewTimer(delay*3/4 + j)
		select {
		case <-t.C:
		case <-r.done:
			t.Stop()
			return
		}
		if s.closing.Load() || ctx.Err() != nil {
			return
		}
		s.cmu.Lock()
		if s.isAway() {
			// The user disconnected meanwhile (op disconnect): it
			// connects again when it says so.
			s.cmu.Unlock()
			r.restored()
			return
		}
		err := s.dial(ctx)
		s.cmu.Unlock()
		if err == nil {
			r.restored()
			return
		}
		delay = min(2*delay, backoffMax)
	}
}

// broke counts a broken connection; the first opens an outage window. It
// returns the window's index.
func (r *run) broke() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if (r.broken == 0 || len(r.outages) == 0) && !r.closed {
		now := time.Now()
		r.outages = append(r.outages, outage{start: now, at: now.Sub(r.start)})
	}
	r.broken++
	n := len(r.outages)
	if n > 0 {
		r.outages[n-1].conns++
	}
	return int32(n - 1)
}

// restored counts a connection restored; the last closes the window, an
// "outage" event whose latency is its length.
func (r *run) restored() {
	r.mu.Lock()
	r.broken--
	var closed *outage
	if n := len(r.outages); r.broken == 0 && n > 0 && r.outages[n-1].end.IsZero() {
		r.outages[n-1].end = time.Now()
		o := r.outages[n-1]
		closed = &o
	}
	r.mu.Unlock()
	if closed != nil {
		r.event(evOutage, closed.start, closed.end.Sub(closed.start), 0, driver.OK, nil)
	}
}

// lastOutage returns the index of the run's last outage (-1: none).
func (r *run) lastOutage() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int32(len(r.outages) - 1)
}

// outageTotals returns the connections broken now, how many outage windows
// there were and how long they lasted in all (an open one until now).
func (r *run) outageTotals() (broken, count int, total time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.outages {
		end := o.end
		if end.IsZero() {
			end = time.Now()
		}
		total += end.Sub(o.start)
	}
	return r.broken, len(r.outages), total
}

// isAway reports whether the user disconnected on purpose (op disconnect).
func (s *session) isAway() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.away
}
