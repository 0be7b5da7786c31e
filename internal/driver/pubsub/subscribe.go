package pubsub

import (
	"context"
	"errors"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// extraSub is a subscription of op subscribe awaiting the broker's
// confirmation: the SUBACK of packet id (MQTT), or the PONG of the ping-th
// PING sent after the handshake (NATS: the PING follows the SUBs).
type extraSub struct {
	cov     coverage
	filters []string
	id      uint16
	ping    uint64
	done    chan error // the confirmation (nil) or the refusal
}

// subscribe is the action "subscribe": the user subscribes, on its current
// connection, to the action's subject (or every subject), and from the
// broker's confirmation on, the messages on it are expected of the user
// and accounted like the group's subscription (see registry.go). Its
// latency is SUBSCRIBE to SUBACK (MQTT), SUB + PING to PONG (NATS).
// Subjects the user already has are not asked again: a subscribe to those
// only is a no-op. A user away (op disconnect) or reconnecting fails at
// once (class dial). A new connection (op connect, a reconnection)
// subscribes to the group's subscription only, except a persistent MQTT
// session that goes on over a broken connection (the broker keeps its
// subscriptions).
func (s *session) subscribe(ctx context.Context, act *action) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	nc, ep, err := s.conn()
	if err != nil {
		return err
	}
	c, r := s.c, s.r
	ep.mu.Lock()
	if (ep.sub != nil && ep.sub.ended) || ep.extra != nil {
		ep.mu.Unlock()
		return errReconnecting
	}
	var cov coverage
	if ep.sub != nil {
		cov = ep.sub.cov
	}
	var want []int32
	if act.subMode != "" {
		for i := range c.Subjects {
			if !cov.has(int32(i)) {
				want = append(want, int32(i))
			}
		}
	} else {
		subj := act.subject
		if subj == ownSubject {
			subj = int32(s.u.ID % c.Subjects)
		}
		if !cov.has(subj) {
			want = []int32{subj}
		}
	}
	if len(want) == 0 {
		ep.mu.Unlock()
		return nil // already subscribed
	}
	x := &extraSub{cov: coverage{subjects: want}, done: make(chan error, 1)}
	if ep.sub == nil && len(want) == c.Subjects {
		// Every subject and nothing yet: as the group's subscription would.
		x.cov = coverage{all: true}
		if act.subMode == SubWildcard {
			x.filters = []string{r.wildcard()}
		}
	}
	if x.filters == nil {
		// A wildcard over subjects the user partly has would deliver
		// those twice: the missing subjects are asked one by one.
		for _, n := range want {
			x.filters = append(x.filters, r.subjectName(int(n)))
		}
	}
	msg := ep.pc.subscribe(x, byte(c.QoS), s.nextID)
	ep.extra = x
	ep.mu.Unlock()
	if err := r.open(); err != nil {
		s.dropExtra(ep, x)
		return err
	}
	if _, err := s.write(nc, msg); err != nil {
		s.dropExtra(ep, x)
		s.broken(nc)
		if driver.Classify(err) == driver.Timeout {
			return driver.Errorf(driver.Timeout, err)
		}
		return driver.Errorf(driver.IO, err)
	}
	t := time.NewTimer(c.Timeout.D())
	defer t.Stop()
	select {
	case err := <-x.done:
		return err
	case <-t.C:
		s.dropExtra(ep, x)
		return driver.Errorf(driver.Timeout, errNoSuback)
	case <-ctx.Done():
		s.dropExtra(ep, x)
		return context.Cause(ctx)
	}
}

var errNoSuback = errors.New("no confirmation of the subscription (SUBACK, PONG) within the timeout")

// dropExtra forgets a subscription still awaiting its confirmation: a
// late confirmation is ignored, and what the broker then delivers on it
// counts early.
func (s *session) dropExtra(ep *endpoint, x *extraSub) {
	ep.mu.Lock()
	if ep.extra == x {
		ep.extra = nil
	}
	ep.mu.Unlock()
}

// confirmExtra ends the wait for the pending op subscribe: confirmed (err
// nil), its subjects are owed from now on, each existing stream above its
// count now, like a subscription at log-on (see subscription.add). Call
// with mu held.
func (ep *endpoint) confirmExtra(err error) {
	x := ep.extra
	ep.extra = nil
	if err == nil && (ep.sub == nil || !ep.sub.ended) {
		if ep.sub == nil {
			ep.sub = newSubscription(ep.r, ep.rq.user, ep.mu)
		}
		ep.sub.add(x.cov, x.filters)
		ep.r.keepSub(ep.sub)
		ep.confirmed = true
	}
	x.done <- err
}
