package pubsub

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub/mqttwire"
)

// mqttProto is MQTT 3.1.1, or 5.0 when v5.
type mqttProto struct{ v5 bool }

func (p mqttProto) conn(ep *endpoint) protoConn {
	return &mqttConn{ep: ep, p: mqttwire.Parser{V5: p.v5}}
}

func (mqttProto) defaultPattern() string    { return "throng/{run}/{n}" }
func (mqttProto) wildcard() string          { return "+" }
func (mqttProto) control(run string) string { return "throng-ctl/" + run }
func (mqttProto) goodbye() []byte           { return mqttwire.DisconnectPacket }
func (mqttProto) acknowledged() bool        { return true }
func (mqttProto) qosRetain() bool           { return true }

func (p mqttProto) publishFrame(topic string, qos byte, retain bool, payload []byte) ([]byte, int, int) {
	return mqttwire.PublishFrame(p.v5, topic, qos, retain, payload)
}

func (mqttProto) describe(c *Config, m map[string]string) {
	m["qos"] = strconv.Itoa(c.QoS)
	m["clean_session"] = strconv.FormatBool(c.CleanSession)
}

// mqttConn is an MQTT connection's state: CONNECT and SUBSCRIBE are sent
// together, CONNACK then SUBACK end the handshake; PUBLISHes of QoS 1 and
// 2 are acknowledged (PUBACK; PUBREC, PUBREL, PUBCOMP), PUBACK and PUBCOMP
// of the user's publishes go to ep.acks.
type mqttConn struct {
	ep    *endpoint
	p     mqttwire.Parser
	subID uint16 // the handshake's SUBSCRIBE, awaiting its SUBACK
}

func (mc *mqttConn) greet(net.Conn, []byte, bool) ([]byte, error) { return nil, nil }

func (mc *mqttConn) hello(c *Config, name string) []byte {
	ep := mc.ep
	msg := mqttwire.ConnectPacket(mqttwire.ConnectOptions{V5: mc.p.V5, ClientID: name, User: c.user, Pass: c.pass,
		KeepAlive: uint16(c.KeepAlive.D() / time.Second), Clean: c.CleanSession || ep.rq.ctl != nil, SessionExpiry: c.sessionExpiry()})
	if len(ep.rq.filters) > 0 {
		mc.subID = 1
		msg = append(msg, mqttwire.SubscribePacket(mc.p.V5, 1, ep.rq.filters, byte(c.QoS))...)
	}
	ep.state = epConnecting
	return msg
}

// sessionExpiry is the MQTT 5 session expiry to ask for.
func (c *Config) sessionExpiry() uint32 {
	if c.CleanSession {
		return 0
	}
	return uint32(c.SessionExpiry.D() / time.Second)
}

func (mc *mqttConn) whole()              { mc.p.Big = new([]byte) }
func (mc *mqttConn) feed(p []byte) error { return mc.p.Feed(p, mc) }

func (mc *mqttConn) subscribe(x *extraSub, qos byte, nextID func() uint16) []byte {
	x.id = nextID()
	return mqttwire.SubscribePacket(mc.p.V5, x.id, x.filters, qos)
}

func (mc *mqttConn) ping(b []byte) []byte   { return append(b, mqttwire.PingreqPacket...) }
func (mc *mqttConn) pingWhileSending() bool { return true }
func (mc *mqttConn) serverID() uint64       { return 0 }

// Publish implements mqttwire.Handler: a delivery, acknowledged as its QoS
// asks.
func (mc *mqttConn) Publish(qos byte, dup bool, id uint16, prefix []byte, size int) {
	ep := mc.ep
	switch qos {
	case 1:
		ep.out = mqttwire.Ack(ep.out, mqttwire.Puback, id)
	case 2:
		ep.out = mqttwire.Ack(ep.out, mqttwire.Pubrec, id)
	}
	ep.message(prefix, size)
}

// Packet implements mqttwire.Handler: every other packet.
func (mc *mqttConn) Packet(typ, flags byte, body []byte) {
	ep, v5 := mc.ep, mc.p.V5
	switch typ {
	case mqttwire.Connack:
		ca, err := mqttwire.ParseConnack(v5, body)
		switch {
		case err != nil:
			ep.err = driver.Errorf(driver.Protocol, err)
		case ca.Code != 0:
			ep.err = mqttwire.ConnackError(v5, ca)
		default:
			if ca.KeepAlive >= 0 {
				ep.keepAlive = int64(ca.KeepAlive) * int64(time.Second)
			}
			if ep.state == epConnecting {
				if ep.subscribing() {
					ep.state = epSubscribing
				} else {
					ep.state = epReady
				}
			}
		}
	case mqttwire.Suback:
		if x := ep.extra; x != nil && ep.state == epReady && len(body) >= 2 && uint16(body[0])<<8|uint16(body[1]) == x.id {
			codes, err := mqttwire.ParseSuback(v5, body, x.id)
			if err == nil {
				err = mqttwire.SubackError(codes)
			} else {
				err = driver.Errorf(driver.Protocol, err)
			}
			ep.confirmExtra(err)
			return
		}
		if ep.state != epSubscribing || len(body) < 2 || uint16(body[0])<<8|uint16(body[1]) != mc.subID {
			return
		}
		codes, err := mqttwire.ParseSuback(v5, body, mc.subID)
		if err != nil {
			ep.err = driver.Errorf(driver.Protocol, err)
			return
		}
		if err := mqttwire.SubackError(codes); err != nil {
			ep.err = err
			return
		}
		ep.ready()
	case mqttwire.Puback, mqttwire.Pubcomp:
		if len(body) >= 2 && ep.acks != nil {
			select {
			case ep.acks <- uint16(body[0])<<8 | uint16(body[1]):
			default: // nobody waits any more (timed out)
			}
		}
	case mqttwire.Pubrec:
		if len(body) >= 2 {
			ep.out = mqttwire.Ack(ep.out, mqttwire.Pubrel, uint16(body[0])<<8|uint16(body[1]))
		}
	case mqttwire.Pubrel:
		if len(body) >= 2 {
			ep.out = mqttwire.Ack(ep.out, mqttwire.Pubcomp, uint16(body[0])<<8|uint16(body[1]))
		}
	case mqttwire.Disconnect:
		ep.err = mqttwire.DisconnectError(body)
	case mqttwire.Auth:
		ep.err = driver.Errorf(driver.Auth, errors.New("mqtt: the server asked for extended authentication, which is not supported"))
	}
}
