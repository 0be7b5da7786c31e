package mqttwire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/throng-io/throng/internal/driver"
)

// MQTT packets the client builds (CONNECT, SUBSCRIBE, UNSUBSCRIBE, PUBLISH,
// the acknowledgements) and the answers it reads during a handshake
// (CONNACK, SUBACK, with MQTT 5 properties).

// appendVarint appends n as a variable byte integer.
func appendVarint(b []byte, n int) []byte {
	for {
		c := byte(n % 128)
		n /= 128
		if n > 0 {
			c |= 0x80
		}
		b = append(b, c)
		if n == 0 {
			return b
		}
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// packet wraps a body in a fixed header.
func packet(first byte, body []byte) []byte {
	b := appendVarint([]byte{first}, len(body))
	return append(b, body...)
}

// ConnectOptions are a CONNECT's settings.
type ConnectOptions struct {
	V5         bool
	ClientID   string
	User, Pass string
	KeepAlive  uint16 // seconds
	Clean      bool   // 3.1.1 clean session; 5.0 clean start
	// SessionExpiry (5.0) keeps a session this long after a disconnect;
	// with 3.1.1 a session without Clean is kept until the broker drops it.
	SessionExpiry uint32
}

// ConnectPacket builds a CONNECT (3.1.1 section 3.1, 5.0 section 3.1).
func ConnectPacket(o ConnectOptions) []byte {
	b := appendString(nil, "MQTT")
	level, flags := byte(4), byte(0)
	if o.V5 {
		level = 5
	}
	if o.Clean {
		flags |= 0x02
	}
	if o.User != "" {
		flags |= 0x80
	}
	if o.Pass != "" {
		flags |= 0x40
	}
	b = append(b, level, flags)
	b = binary.BigEndian.AppendUint16(b, o.KeepAlive)
	if o.V5 {
		var props []byte
		if o.SessionExpiry > 0 {
			props = append(props, 0x11)
			props = binary.BigEndian.AppendUint32(props, o.SessionExpiry)
		}
		b = appendVarint(b, len(props))
		b = append(b, props...)
	}
	b = appendString(b, o.ClientID)
	if o.User != "" {
		b = appendString(b, o.User)
	}
	if o.Pass != "" {
		b = appendString(b, o.Pass)
	}
	return packet(Connect<<4, b)
}

// SubscribePacket builds a SUBSCRIBE of filters at qos.
func SubscribePacket(v5 bool, id uint16, filters []string, qos byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	if v5 {
		b = append(b, 0) // no properties
	}
	for _, f := range filters {
		b = appendString(b, f)
		b = append(b, qos)
	}
	return packet(Subscribe<<4|0x02, b)
}

// PublishFrame builds a PUBLISH of payload; idAt is the offset of the
// packet identifier (QoS > 0, else -1) and at the payload's offset, both
// patched per message.
func PublishFrame(v5 bool, topic string, qos byte, retain bool, payload []byte) (frame []byte, idAt, at int) {
	body := appendString(nil, topic)
	idAt = -1
	if qos > 0 {
		idAt = len(body)
		body = append(body, 0, 0)
	}
	if v5 {
		body = append(body, 0)
	}
	first := byte(Publish<<4) | qos<<1
	if retain {
		first |= 1
	}
	head := appendVarint([]byte{first}, len(body)+len(payload))
	frame = append(append(head, body...), payload...)
	if idAt >= 0 {
		idAt += len(head)
	}
	return frame, idAt, len(head) + len(body)
}

// Ack appends a PUBACK, PUBREC, PUBREL or PUBCOMP for id (the short
// form: in 5.0 a success reason code and no properties may be left out).
func Ack(b []byte, typ byte, id uint16) []byte {
	first := typ << 4
	if typ == Pubrel {
		first |= 0x02
	}
	return append(b, first, 2, byte(id>>8), byte(id))
}

var (
	PingreqPacket    = []byte{Pingreq << 4, 0}
	DisconnectPacket = []byte{Disconnect << 4, 0}
)

// ConnAck is a decoded CONNACK.
type ConnAck struct {
	SessionPresent bool
	Code           byte
	KeepAlive      int    // 5.0 Server Keep Alive, -1 when absent
	Reason         string // 5.0 Reason String
}

// ParseConnack decodes a CONNACK body.
func ParseConnack(v5 bool, body []byte) (ConnAck, error) {
	ca := ConnAck{KeepAlive: -1}
	if len(body) < 2 {
		return ca, ErrProtocol
	}
	ca.SessionPresent, ca.Code = body[0]&1 != 0, body[1]
	if v5 && len(body) > 2 {
		err := walkProps(body[2:], func(id byte, v []byte) {
			switch id {
			case 0x13:
				ca.KeepAlive = int(binary.BigEndian.Uint16(v))
			case 0x1f:
				ca.Reason = string(v[2:])
			}
		})
		if err != nil {
			return ca, err
		}
	}
	return ca, nil
}

// ConnackError turns a refusing CONNACK into an error of the right class:
// credentials refused are Auth, a server that is full or unavailable is
// Dial (the connection was refused), anything else Protocol.
func ConnackError(v5 bool, ca ConnAck) error {
	var class driver.Class
	var what string
	if !v5 {
		switch ca.Code {
		case 1:
			class, what = driver.Protocol, "unacceptable protocol version"
		case 2:
			class, what = driver.Protocol, "client identifier rejected"
		case 3:
			class, what = driver.Dial, "server unavailable"
		case 4:
			class, what = driver.Auth, "bad user name or password"
		case 5:
			class, what = driver.Auth, "not authorized"
		default:
			class, what = driver.Protocol, "unknown return code"
		}
	} else {
		switch ca.Code {
		case 0x86:
			class, what = driver.Auth, "bad user name or password"
		case 0x87:
			class, what = driver.Auth, "not authorized"
		case 0x88:
			class, what = driver.Dial, "server unavailable"
		case 0x89:
			class, what = driver.Dial, "server busy"
		case 0x97:
			class, what = driver.Dial, "quota exceeded"
		case 0x9f:
			class, what = driver.Dial, "connection rate exceeded"
		case 0x84:
			class, what = driver.Protocol, "unsupported protocol version"
		default:
			class, what = driver.Protocol, "refused"
		}
	}
	msg := fmt.Sprintf("mqtt: connection refused: %s (code %d)", what, ca.Code)
	if ca.Reason != "" {
		msg += ": " + ca.Reason
	}
	return driver.Errorf(class, errors.New(msg))
}

// ParseSuback returns the granted QoS (or failure codes ≥ 0x80) of a SUBACK
// body for packet id.
func ParseSuback(v5 bool, body []byte, id uint16) ([]byte, error) {
	if len(body) < 2 || binary.BigEndian.Uint16(body) != id {
		return nil, ErrProtocol
	}
	body = body[2:]
	if v5 {
		n, w, ok := varint(body)
		if !ok || w+n > len(body) {
			return nil, ErrProtocol
		}
		body = body[w+n:]
	}
	return body, nil
}

// walkProps calls f for each MQTT 5 property of a properties field (its
// length first). Variable-length values are passed with their length
// prefix.
func walkProps(b []byte, f func(id byte, v []byte)) error {
	n, w, ok := varint(b)
	if !ok || w+n > len(b) {
		return ErrProtocol
	}
	b = b[w : w+n]
	for len(b) > 0 {
		id := b[0]
		b = b[1:]
		var size int
		switch id {
		case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2a:
			size = 1
		case 0x13, 0x21, 0x22, 0x23:
			size = 2
		case 0x02, 0x11, 0x18, 0x27:
			size = 4
		case 0x0b:
			_, vw, ok := varint(b)
			if !ok {
				return ErrProtocol
			}
			size = vw
		case 0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1a, 0x1c, 0x1f:
			if len(b) < 2 {
				return ErrProtocol
			}
			size = 2 + int(binary.BigEndian.Uint16(b))
		case 0x26:
			if len(b) < 2 {
				return ErrProtocol
			}
			k := 2 + int(binary.BigEndian.Uint16(b))
			if len(b) < k+2 {
				return ErrProtocol
			}
			size = k + 2 + int(binary.BigEndian.Uint16(b[k:]))
		default:
			return ErrProtocol
		}
		if size > len(b) {
			return ErrProtocol
		}
		f(id, b[:size])
		b = b[size:]
	}
	return nil
}

// SubackError is the error of a SUBACK's refused filters, nil when all
// were granted.
func SubackError(codes []byte) error {
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

// DisconnectError is the error of a DISCONNECT the server sent, whose body
// starts with body (5.0: the reason code; 3.1.1: empty). A server that is
// busy, over its quota or shutting down refused the connection (Dial);
// any other reason broke it (IO).
func DisconnectError(body []byte) error {
	code := byte(0)
	if len(body) > 0 {
		code = body[0]
	}
	class := driver.IO
	if code == 0x97 || code == 0x89 || code == 0x9f {
		class = driver.Dial
	}
	return driver.Errorf(class, fmt.Errorf("mqtt: the server disconnected (reason %#x)", code))
}
