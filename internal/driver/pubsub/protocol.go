package pubsub

import "net"

// protocol is all that differs between NATS and MQTT above the wire
// codecs (packages natswire and mqttwire): the names of subjects, the
// frames a publisher sends, what a clean leave sends, and, through conn,
// the state machine of one connection. The rest of the package (the
// handshake's shape, the sessions, the epoll loop, the accounting) speaks
// to this interface only; protocolOf is the one place that names the
// protocols.
type protocol interface {
	// conn returns the protocol state of a new connection of ep.
	conn(ep *endpoint) protoConn
	// defaultPattern is the subjects' name pattern when the block gives
	// none; wildcard is the filter token matching one level; control is
	// the name of a distributed run's control subject.
	defaultPattern() string
	wildcard() string
	control(run string) string
	// publishFrame builds a message of payload on topic: the frame, the
	// offset of its packet identifier (-1 without: patched per message)
	// and of the payload (its header is patched per message).
	publishFrame(topic string, qos byte, retain bool, payload []byte) (frame []byte, idAt, at int)
	// goodbye is what a clean leave sends before the half-close (empty:
	// nothing).
	goodbye() []byte
	// acknowledged reports whether publishes with QoS > 0 are
	// acknowledged (endpoint.acks); qosRetain whether the protocol has QoS
	// and retained messages at all.
	acknowledged() bool
	qosRetain() bool
	// describe adds the protocol's own settings to Describe's map.
	describe(c *Config, m map[string]string)
}

// protoConn is one connection's protocol state machine, whoever feeds it:
// the user's goroutine during the handshake, then an epoll loop or a
// reader goroutine (see endpoint). Its methods are called with ep.mu held,
// except greet and hello, which run before the connection is shared.
type protoConn interface {
	// greet reads what the server says before the client speaks (NATS:
	// INFO), on the plain connection, and returns the bytes read after
	// it. wantTLS is the target's scheme: greet refuses a server that
	// requires TLS when it is not asked for.
	greet(nc net.Conn, buf []byte, wantTLS bool) (rest []byte, err error)
	// hello is the client's opening: log-on, the subscription of rq (see
	// request) and what makes the server confirm both. It sets ep.state.
	hello(c *Config, name string) []byte
	// whole makes the connection hand over payloads whole (the control
	// connection reads its messages entire).
	whole()
	// feed decodes bytes from the server into the endpoint.
	feed(p []byte) error
	// subscribe is op subscribe's request for x on a ready connection,
	// and sets what confirms it (x.id or x.ping); nextID gives a packet
	// identifier unused by the session.
	subscribe(x *extraSub, qos byte, nextID func() uint16) []byte
	// ping appends a keep-alive ping to b; pingWhileSending reports
	// whether the client must ping even when it keeps sending (MQTT: the
	// keep-alive bounds the client's silence, NATS: the server's).
	ping(b []byte) []byte
	pingWhileSending() bool
	// serverID is the connection's id on the server (NATS: to ask its
	// monitor why it was closed), 0 when there is none.
	serverID() uint64
}

// protocolOf returns the protocol named name (NATS, MQTT or MQTT5; empty:
// NATS, the embedded broker's).
func protocolOf(name string) protocol {
	switch name {
	case MQTT:
		return mqttProto{}
	case MQTT5:
		return mqttProto{v5: true}
	}
	return natsProto{}
}

// protocol returns the configured protocol.
func (c *Config) protocol() protocol { return protocolOf(c.proto) }
