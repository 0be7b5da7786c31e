package pubsub

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
)

// endpoint is the protocol state of one connection, whoever reads it: the
// user's goroutine during the handshake, then an epoll loop (passive
// subscribers) or a reader goroutine. It decodes what the broker sends,
// queues the replies the protocol needs (PONG, PUBACK, PUBREC, PUBREL,
// PUBCOMP) in out, accounts the deliveries of its subscription and
// signals publish acknowledgements. Bytes are fed with mu held.
type endpoint struct {
	r  *run
	pc protoConn // the protocol's state machine (see protocol.go)

	// mu is held while bytes are fed, and by the drain; the endpoints of
	// one subscription share it (see subscription): it is own, or the
	// first endpoint's.
	mu    *sync.Mutex
	own   sync.Mutex
	state uint8
	err   error  // why the handshake or the connection failed
	out   []byte // replies to write
	now   int64  // arrival time (Unix ns) of the bytes being fed

	// rq is what the handshake asked for: the subscription's coverage and
	// filters (none: the user only publishes).
	rq request
	// sub is what the user's subscriptions are owed: nil until the broker
	// first confirms one; the previous connection's after a break (its
	// accounting goes on over the new connection, deliveries before the
	// confirmation included). confirmed: this connection's subscription
	// was confirmed.
	sub       *subscription
	confirmed bool
	// last is the stream of the last delivery (a subscriber mostly hears
	// one): its registry lookup is saved (mu).
	last *stream
	// left: the user disconnected this connection on purpose (op
	// disconnect); its end is not a loss.
	left atomic.Bool

	// extra is the subscription of op subscribe awaiting its
	// confirmation (see subscribe.go).
	extra *extraSub

	// acks receives the identifiers of acknowledged publishes (PUBACK,
	// PUBCOMP) for the user's goroutine; nil when it never publishes QoS > 0.
	acks chan uint16

	// The keep-alive (see keepalive.go): every connection that has
	// received nothing for half of it is pinged (NATS PING, MQTT PINGREQ);
	// a ping unanswered for another half is a dead connection.
	lastSent  atomic.Int64 // Unix ns of the last write
	lastRecv  int64        // Unix ns of the last bytes read (mu)
	pingSent  int64        // Unix ns of the ping awaiting an answer, 0 none (mu)
	keepAlive int64        // in ns (0: none)

	// In an epoll loop: the socket, its token, and whether EPOLLOUT is
	// armed for replies the socket did not take.
	fd       int
	tok      rawsock.Token
	outArmed bool

	sess *session // the user's session, to reconnect
}

// Endpoint states.
const (
	epConnecting  = iota // CONNECT sent
	epSubscribing        // connected, subscription sent, awaiting its confirmation
	epReady              // connected (and subscribed)
	epClosed
)

func newEndpoint(r *run, user int, p protocol) *endpoint {
	ep := &endpoint{r: r, rq: request{user: user}}
	ep.mu = &ep.own
	ep.pc = p.conn(ep)
	return ep
}

// feed decodes bytes that arrived at now (Unix ns). Call with mu held.
func (ep *endpoint) feed(p []byte, now int64) error {
	ep.now, ep.lastRecv, ep.pingSent = now, now, 0
	return ep.pc.feed(p)
}

// handshaking reports whether the endpoint still waits for the broker's
// confirmation of its connection or subscription.
func (ep *endpoint) handshaking() bool { return ep.state < epReady && ep.err == nil }

// subscribing reports whether the connection asks for a subscription or
// carries one on.
func (ep *endpoint) subscribing() bool { return len(ep.rq.filters) > 0 || ep.sub != nil }

// ready marks the handshake done; a subscription is confirmed now: the
// user's first (its accounting begins), or the one of a connection that
// broke, asked again (its accounting goes on). Call with mu held.
func (ep *endpoint) ready() {
	if ep.state == epSubscribing && ep.rq.ctl == nil {
		if ep.sub == nil {
			ep.sub = newSubscription(ep.r, ep.rq.user, ep.mu)
			ep.sub.add(ep.rq.cov, ep.rq.filters)
			ep.r.keepSub(ep.sub)
		} else {
			ep.sub.restored()
		}
		ep.confirmed = true
	}
	ep.state = epReady
}

// message is a message the protocol decoded: a delivery, or on the
// control connection a control message (prefix is then the whole payload).
func (ep *endpoint) message(prefix []byte, size int) {
	if ctl := ep.rq.ctl; ctl != nil {
		ctl.handle(prefix)
		return
	}
	ep.deliver(prefix, size)
}

// Deliveries.

var errForeign = errors.New("a message without throng's header (another publisher on the subject?)")

var errOtherRun = errors.New("a message of another throng run on this run's subjects (pubsub.subject fixes the names: two runs at once share them)")

// deliver accounts one message whose payload starts with prefix. It does
// not allocate.
func (ep *endpoint) deliver(prefix []byte, size int) {
	r := ep.r
	h, ok := parseHeader(prefix)
	if !ok || h.run != r.tag {
		r.stats.corrupt.Add(1)
		err := errForeign
		if ok {
			err = errOtherRun
		}
		r.event(evDeliver, time.Time{}, -1, int64(size), driver.Corrupt, err)
		return
	}
	sent := time.Unix(0, h.sent)
	lat := time.Duration(ep.now - h.sent)
	if lat < 0 {
		lat = 0
	}
	var t *track
	if s := ep.sub; s != nil {
		st := ep.last
		if key := h.key(); st == nil || st.key != key {
			if st = r.reg.lookup(key); st == nil && r.ctl != nil {
				st = r.reg.learn(key) // a publisher of another segment
			}
			if st != nil {
				ep.last = st
			}
		}
		if st != nil {
			t = s.track(st)
		}
	}
	if t == nil {
		// Not (yet) subscribed here, or a stream it does not expect.
		if s := ep.sub; s != nil {
			s.early++
		}
		r.stats.early.Add(1)
		r.event(evDeliver, sent, lat, int64(size), driver.OK, nil)
		return
	}
	ep.account(t, h.seq, sent, lat, size)
}

// account records the arrival of message seq on its stream's track.
func (ep *endpoint) account(t *track, seq uint64, sent time.Time, lat time.Duration, size int) {
	r := ep.r
	pending := t.pending
	switch t.add(seq) {
	case inOrder:
		if !pending {
			r.stats.delivered.Add(1)
		}
		r.event(evDeliver, sent, lat, int64(size), driver.OK, nil)
	case late:
		if !pending {
			r.stats.delivered.Add(1)
		}
		r.stats.late.Add(1)
		r.event(evDeliver, sent, lat, int64(size), driver.OK, nil)
		r.event(evOutOfOrder, sent, lat, int64(size), driver.OK, nil)
	case duplicate:
		r.stats.dup.Add(1)
		r.event(evDuplicate, sent, lat, int64(size), driver.OK, nil)
	case early:
		r.stats.early.Add(1)
		r.event(evDeliver, sent, lat, int64(size), driver.OK, nil)
	}
}
