package pubsub

import (
	"errors"
	"net"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub/natswire"
)

// natsProto is NATS core.
type natsProto struct{}

func (natsProto) conn(ep *endpoint) protoConn { return &natsConn{ep: ep} }

func (natsProto) defaultPattern() string                  { return "throng.{run}.{n}" }
func (natsProto) wildcard() string                        { return "*" }
func (natsProto) control(run string) string               { return "throng-ctl." + run }
func (natsProto) goodbye() []byte                         { return nil }
func (natsProto) acknowledged() bool                      { return false }
func (natsProto) qosRetain() bool                         { return false }
func (natsProto) describe(c *Config, m map[string]string) {}

func (natsProto) publishFrame(topic string, _ byte, _ bool, payload []byte) ([]byte, int, int) {
	frame, at := natswire.PubFrame(topic, payload)
	return frame, -1, at
}

// natsConn is a NATS connection's state: the server's INFO, then CONNECT,
// the SUBs and a PING whose PONG confirms them all (the server answers in
// order); the same PING after the SUBs of op subscribe; the server's PINGs
// answered.
type natsConn struct {
	ep *endpoint
	p  natswire.Parser
	// sids is the last subscription id used; pings and pongs count the
	// PINGs sent after the handshake and their PONGs.
	sids         uint32
	pings, pongs uint64
	cid          uint64 // the connection's id on the server (INFO)
}

func (nc *natsConn) greet(conn net.Conn, buf []byte, wantTLS bool) ([]byte, error) {
	line, rest, err := readLine(conn, buf)
	if err != nil {
		return nil, handshakeError(err)
	}
	info, err := natswire.ParseInfo(line)
	if err != nil {
		return nil, driver.Errorf(driver.Protocol, err)
	}
	nc.cid = info.ClientID
	if info.TLSRequired && !wantTLS {
		return nil, driver.Errorf(driver.TLS, errors.New("nats: the server requires TLS: use a tls:// target"))
	}
	return rest, nil
}

func (nc *natsConn) hello(c *Config, name string) []byte {
	ep := nc.ep
	msg := natswire.Connect(name, c.user, c.pass, c.tls)
	for i, f := range ep.rq.filters {
		msg = natswire.Sub(msg, f, uint32(i+1))
	}
	nc.sids = uint32(len(ep.rq.filters))
	msg = append(msg, natswire.Ping...)
	ep.state = epConnecting
	if len(ep.rq.filters) > 0 {
		ep.state = epSubscribing
	}
	return msg
}

func (nc *natsConn) whole()              { nc.p.Pay = new([]byte) }
func (nc *natsConn) feed(p []byte) error { return nc.p.Feed(p, nc) }

func (nc *natsConn) subscribe(x *extraSub, _ byte, _ func() uint16) []byte {
	var msg []byte
	for _, f := range x.filters {
		nc.sids++
		msg = natswire.Sub(msg, f, nc.sids)
	}
	x.ping = nc.pings + 1
	return nc.ping(msg)
}

// ping appends a PING; its PONG comes in turn (see Pong).
func (nc *natsConn) ping(b []byte) []byte {
	nc.pings++
	return append(b, natswire.Ping...)
}

func (nc *natsConn) pingWhileSending() bool { return false }
func (nc *natsConn) serverID() uint64       { return nc.cid }

// Msg implements natswire.Handler: a delivery.
func (nc *natsConn) Msg(sid uint32, prefix []byte, size int) { nc.ep.message(prefix, size) }

// Ping implements natswire.Handler: the server's keep-alive.
func (nc *natsConn) Ping() { nc.ep.out = append(nc.ep.out, natswire.Pong...) }

// Pong implements natswire.Handler: the handshake's PING answered, or a
// later one (op subscribe's, the keep-alive's).
func (nc *natsConn) Pong() {
	ep := nc.ep
	if ep.state < epReady {
		ep.ready()
		return
	}
	nc.pongs++
	if x := ep.extra; x != nil && nc.pongs >= x.ping {
		ep.confirmExtra(nil)
	}
}

// Err implements natswire.Handler: a -ERR line.
func (nc *natsConn) Err(msg []byte) {
	if nc.ep.err == nil {
		nc.ep.err = natswire.ServerError(string(msg))
	}
}
