package pubsub

import (
	"errors"
	"fmt"
	"strings"
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
	r    *run
	mqtt bool
	np   *natsParser
	mp   *mqttParser

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
	rq    request
	subID uint16 // MQTT: the SUBSCRIBE awaiting its SUBACK
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

	// Subscriptions added by op subscribe (see subscribe.go): extra awaits
	// its confirmation; sids is the last NATS subscription id used; pings
	// and pongs count the NATS PINGs sent after the handshake and their
	// PONGs.
	extra        *extraSub
	sids         uint32
	pings, pongs uint64

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
	cid  uint64   // NATS: the connection's id on the server, to ask why it was closed
}

// Endpoint states.
const (
	epConnecting  = iota // CONNECT sent
	epSubscribing        // connected, subscription sent, awaiting its confirmation
	epReady              // connected (and subscribed)
	epClosed
)

func newEndpoint(r *run, user int, proto string) *endpoint {
	ep := &endpoint{r: r, mqtt: proto != NATS, rq: request{user: user}}
	ep.mu = &ep.own
	if ep.mqtt {
		ep.mp = &mqttParser{v5: proto == MQTT5}
	} else {
		ep.np = &natsParser{}
	}
	return ep
}

// feed decodes bytes that arrived at now (Unix ns). Call with mu held.
func (ep *endpoint) feed(p []byte, now int64) error {
	ep.now, ep.lastRecv, ep.pingSent = now, now, 0
	if ep.mqtt {
		return ep.mp.feed(p, ep)
	}
	return ep.np.feed(p, ep)
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

// NATS handler.

func (ep *endpoint) natsMsg(sid uint32, prefix []byte, size int) {
	if ctl := ep.rq.ctl; ctl != nil {
		ctl.handle(prefix)
		return
	}
	ep.deliver(prefix, size)
}

func (ep *endpoint) natsPing() { ep.out = append(ep.out, "PONG\r\n"...) }

func (ep *endpoint) natsPong() {
	if ep.state < epReady {
		ep.ready()
		return
	}
	ep.pongs++
	if x := ep.extra; x != nil && ep.pongs >= x.ping {
		ep.confirmExtra(nil)
	}
}

func (ep *endpoint) natsErr(msg []byte) {
	if ep.err == nil {
		ep.err = natsError(string(msg))
	}
}

// natsError classifies a -ERR line: refused credentials are Auth, a server
// full (maximum connections) is Dial, a slow consumer is IO.
func natsError(msg string) error {
	lower := strings.ToLower(msg)
	class := driver.Protocol
	switch {
	case strings.Contains(lower, "authorization") || strings.Contains(lower, "authentication") || strings.Contains(lower, "permissions violation"):
		class = driver.Auth
	case strings.Contains(lower, "maximum connections"):
		class = driver.Dial
	case strings.Contains(lower, "slow consumer"):
		class = driver.IO
	case strings.Contains(lower, "stale connection"):
		class = driver.Timeout
	}
	return driver.Errorf(class, fmt.Errorf("nats: server error: %s", msg))
}

// MQTT handler.

func (ep *endpoint) mqttPublish(qos byte, dup bool, id uint16, prefix []byte, size int) {
	switch qos {
	case 1:
		ep.out = mqttAck(ep.out, mqttPuback, id)
	case 2:
		ep.out = mqttAck(ep.out, mqttPubrec, id)
	}
	if ctl := ep.rq.ctl; ctl != nil {
		ctl.handle(prefix)
		return
	}
	ep.deliver(prefix, size)
}

func (ep *endpoint) mqttPacket(typ, flags byte, body []byte) {
	v5 := ep.mp.v5
	switch typ {
	case mqttConnack:
		ca, err := parseConnack(v5, body)
		switch {
		case err != nil:
			ep.err = driver.Errorf(driver.Protocol, err)
		case ca.code != 0:
			ep.err = connackError(v5, ca)
		default:
			if ca.keepAlive >= 0 {
				ep.keepAlive = int64(ca.keepAlive) * int64(time.Second)
			}
			if ep.state == epConnecting {
				if ep.subscribing() {
					ep.state = epSubscribing
				} else {
					ep.state = epReady
				}
			}
		}
	case mqttSuback:
		if x := ep.extra; x != nil && ep.state == epReady && len(body) >= 2 && uint16(body[0])<<8|uint16(body[1]) == x.id {
			codes, err := parseSuback(v5, body, x.id)
			if err == nil {
				err = subackError(codes)
			} else {
				err = driver.Errorf(driver.Protocol, err)
			}
			ep.confirmExtra(err)
			return
		}
		if ep.state != epSubscribing || len(body) < 2 || uint16(body[0])<<8|uint16(body[1]) != ep.subID {
			return
		}
		codes, err := parseSuback(v5, body, ep.subID)
		if err != nil {
			ep.err = driver.Errorf(driver.Protocol, err)
			return
		}
		if err := subackError(codes); err != nil {
			ep.err = err
			return
		}
		ep.ready()
	case mqttPuback, mqttPubcomp:
		if len(body) >= 2 && ep.acks != nil {
			select {
			case ep.acks <- uint16(body[0])<<8 | uint16(body[1]):
			default: // nobody waits any more (timed out)
			}
		}
	case mqttPubrec:
		if len(body) >= 2 {
			ep.out = mqttAck(ep.out, mqttPubrel, uint16(body[0])<<8|uint16(body[1]))
		}
	case mqttPubrel:
		if len(body) >= 2 {
			ep.out = mqttAck(ep.out, mqttPubcomp, uint16(body[0])<<8|uint16(body[1]))
		}
	case mqttDisconnect:
		code := byte(0)
		if len(body) > 0 {
			code = body[0]
		}
		class := driver.IO
		if code == 0x97 || code == 0x89 || code == 0x9f {
			class = driver.Dial
		}
		ep.err = driver.Errorf(class, fmt.Errorf("mqtt: the server disconnected (reason %#x)", code))
	case mqttAuth:
		ep.err = driver.Errorf(driver.Auth, errors.New("mqtt: the server asked for extended authentication, which is not supported"))
	}
}

// subackError is the error of a SUBACK's refused filters, nil when all
// were granted.
func subackError(codes []byte) error {
	for _, code := range codes {
		if code >= 0x80 {
			class := driver.Protocol
			if code == 0x87 || code == 0x80 {
				class = driver.Auth
			}
			return driver.Errorf(class, fmt.Errorf("mqtt: subscription refused (code %#x)", code))
		}
	}
	return nil
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
