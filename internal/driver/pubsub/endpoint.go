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
	user int
	mqtt bool
	np   *natsParser
	mp   *mqttParser

	mu    sync.Mutex // held while bytes are fed, and by the drain
	state uint8
	err   error  // why the handshake or the connection failed
	out   []byte // replies to write
	now   int64  // arrival time (Unix ns) of the bytes being fed

	// The subscription.
	cov     coverage
	subID   uint16 // MQTT: the SUBSCRIBE awaiting its SUBACK
	tracks  []track
	trackOf []int32 // stream id -> index in tracks + 1
	early   uint64  // deliveries before the subscription was confirmed
	// confirmed: the broker confirmed the subscription; its deliveries are
	// accounted from then on, until frozen (the connection broke).
	confirmed bool
	frozen    bool
	// left: the user disconnected this connection on purpose (op
	// disconnect); its end is not a loss.
	left atomic.Bool

	// Subscriptions added by op subscribe (see subscribe.go): extra awaits
	// its confirmation; extraFilters are the confirmed ones' filters; sids
	// is the last NATS subscription id used; pings and pongs count the
	// NATS PINGs sent after the handshake and their PONGs.
	extra        *extraSub
	extraFilters []string
	sids         uint32
	pings, pongs uint64
	adopted      bool // kept in the run's endpoints (guarded by the run's mu)

	// acks receives the identifiers of acknowledged publishes (PUBACK,
	// PUBCOMP) for the user's goroutine; nil when it never publishes QoS > 0.
	acks chan uint16

	lastSent  atomic.Int64 // Unix ns of the last write, for the MQTT keep-alive
	keepAlive int64        // MQTT keep-alive in ns (0: none)

	// In an epoll loop: the socket, its token, and whether EPOLLOUT is
	// armed for replies the socket did not take.
	fd       int
	tok      rawsock.Token
	outArmed bool

	sess *session // the user's session, to reconnect
	cid  uint64   // NATS: the connection's id on the server, to ask why it was closed
	// persistent: an MQTT session the broker keeps across disconnections
	// (clean_session false); its expectations go on through an outage, and
	// inherit is the previous connection's endpoint whose tracks it takes.
	persistent bool
	inherit    *endpoint
}

// Endpoint states.
const (
	epConnecting  = iota // CONNECT sent
	epSubscribing        // connected, subscription sent, awaiting its confirmation
	epReady              // connected (and subscribed)
	epClosed
)

func newEndpoint(r *run, user int, proto string) *endpoint {
	ep := &endpoint{r: r, user: user, mqtt: proto != NATS}
	if ep.mqtt {
		ep.mp = &mqttParser{v5: proto == MQTT5}
	} else {
		ep.np = &natsParser{}
	}
	return ep
}

// feed decodes bytes that arrived at now (Unix ns). Call with mu held.
func (ep *endpoint) feed(p []byte, now int64) error {
	ep.now = now
	if ep.mqtt {
		return ep.mp.feed(p, ep)
	}
	return ep.np.feed(p, ep)
}

// handshaking reports whether the endpoint still waits for the broker's
// confirmation of its connection or subscription.
func (ep *endpoint) handshaking() bool { return ep.state < epReady && ep.err == nil }

// subscribed reports whether deliveries are accounted.
func (ep *endpoint) subscribed() bool { return len(ep.cov.subjects) > 0 || ep.cov.all }

// ready marks the handshake done; a subscription is confirmed now.
func (ep *endpoint) ready() {
	if ep.state == epSubscribing {
		if old := ep.inherit; old != nil {
			old.mu.Lock()
			ep.tracks, ep.trackOf, ep.early = old.tracks, old.trackOf, ep.early+old.early
			// The broker kept the session's subscriptions, op subscribe's
			// too (asked again with the group's, see session.dial).
			ep.cov, ep.extraFilters = old.cov, old.extraFilters
			old.tracks, old.trackOf, old.confirmed = nil, nil, false
			old.mu.Unlock()
			ep.inherit = nil
		} else {
			for _, t := range ep.r.reg.confirm(ep.cov) {
				ep.addTrack(t)
			}
		}
		ep.confirmed = true
	}
	ep.state = epReady
}

// NATS handler.

func (ep *endpoint) natsMsg(sid uint32, prefix []byte, size int) { ep.deliver(prefix, size) }

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
				if ep.subscribed() {
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

// deliver accounts one message whose payload starts with prefix.
func (ep *endpoint) deliver(prefix []byte, size int) {
	r := ep.r
	h, ok := parseHeader(prefix)
	if !ok {
		r.stats.corrupt.Add(1)
		r.event(evDeliver, -1, int64(size), driver.Corrupt, errForeign)
		return
	}
	lat := time.Duration(ep.now - h.sent)
	if lat < 0 {
		lat = 0
	}
	if !ep.confirmed {
		// A persistent MQTT session: the broker sends what it kept for
		// the subscriber as soon as it is connected, before the SUBACK
		// that confirms the new subscription; those messages belong to
		// the accounting of the previous connection, which this one takes
		// over when it is confirmed (ready).
		if old := ep.inherit; old != nil {
			old.mu.Lock()
			var t *track
			if old.confirmed {
				t = old.track(h.stream)
			}
			if t != nil {
				ep.account(t, h.seq, lat, size)
			}
			old.mu.Unlock()
			if t != nil {
				return
			}
		}
		ep.early++
		r.stats.early.Add(1)
		r.event(evDeliver, lat, int64(size), driver.OK, nil)
		return
	}
	t := ep.track(h.stream)
	if t == nil {
		ep.early++
		r.stats.early.Add(1)
		r.event(evDeliver, lat, int64(size), driver.OK, nil)
		return
	}
	ep.account(t, h.seq, lat, size)
}

// account records the arrival of message seq on its stream's track.
func (ep *endpoint) account(t *track, seq uint64, lat time.Duration, size int) {
	r := ep.r
	switch t.add(seq) {
	case inOrder:
		r.stats.delivered.Add(1)
		r.event(evDeliver, lat, int64(size), driver.OK, nil)
	case late:
		r.stats.delivered.Add(1)
		r.stats.late.Add(1)
		r.event(evDeliver, lat, int64(size), driver.OK, nil)
		r.event(evOutOfOrder, lat, int64(size), driver.OK, nil)
	case duplicate:
		r.stats.dup.Add(1)
		r.event(evDuplicate, lat, int64(size), driver.OK, nil)
	case early:
		r.stats.early.Add(1)
		r.event(evDeliver, lat, int64(size), driver.OK, nil)
	}
}

// track returns the accounting of a stream, creating it (based at 0: the
// stream began after the subscription) when the stream is on a covered
// subject; nil for a stream this subscription does not expect.
func (ep *endpoint) track(id uint32) *track {
	if int(id) < len(ep.trackOf) {
		if i := ep.trackOf[id]; i > 0 {
			return &ep.tracks[i-1]
		}
	}
	st := ep.r.reg.stream(id)
	if st == nil || ep.frozen || !ep.covers(st.subject) {
		// A frozen subscription (its connection ended) expects nothing
		// of a stream that began after it ended.
		return nil
	}
	ep.addTrack(newTrack(id, 0))
	return &ep.tracks[len(ep.tracks)-1]
}

func (ep *endpoint) addTrack(t track) {
	ep.tracks = append(ep.tracks, t)
	if int(t.stream) >= len(ep.trackOf) {
		grown := make([]int32, t.stream+1, max(int(t.stream)+1, 2*len(ep.trackOf)))
		copy(grown, ep.trackOf)
		ep.trackOf = grown
	}
	ep.trackOf[t.stream] = int32(len(ep.tracks))
}

func (ep *endpoint) covers(subject int32) bool {
	if ep.cov.all {
		return true
	}
	for _, s := range ep.cov.subjects {
		if s == subject {
			return true
		}
	}
	return false
}

// settle computes the endpoint's accounting against the streams' final
// counts, one tally per stream it expected. Call with mu held, after the
// publishers stopped.
func (ep *endpoint) settle() []streamTally {
	if !ep.confirmed {
		return nil
	}
	for _, st := range ep.r.reg.covered(ep.cov) {
		ep.track(st.id) // every stream it should have heard of
	}
	out := make([]streamTally, 0, len(ep.tracks))
	for i := range ep.tracks {
		t := &ep.tracks[i]
		last := t.hi
		if t.closed {
			last = t.end
		} else if st := ep.r.reg.stream(t.stream); st != nil {
			last = st.sent.Load()
		}
		out = append(out, streamTally{stream: t.stream, tally: t.settle(last)})
	}
	return out
}

// freeze ends the subscription's expectations now: its connection broke,
// so what was published until now and never arrived is lost, and nothing
// published later is expected. Call with mu held.
func (ep *endpoint) freeze() {
	if !ep.confirmed || ep.frozen {
		return
	}
	for _, st := range ep.r.reg.covered(ep.cov) {
		ep.track(st.id)
	}
	ep.frozen = true
	ep.r.reg.release(ep.cov, ep.tracks, false)
}

// leave ends the subscription's expectations at what arrived: the user
// disconnected on purpose (op disconnect) and its reader has stopped, so
// what had not arrived by then was never owed to it (see
// registry.release). Call with mu held.
func (ep *endpoint) leave() {
	if !ep.confirmed || ep.frozen {
		return
	}
	for _, st := range ep.r.reg.covered(ep.cov) {
		ep.track(st.id)
	}
	ep.frozen = true
	ep.r.reg.release(ep.cov, ep.tracks, true)
}

// streamTally is one subscriber's tally of one stream.
type streamTally struct {
	stream uint32
	tally
}
