package pubsub

import (
	"encoding/binary"
	"errors"
)

// MQTT 3.1.1 (OASIS standard, 2014) and MQTT 5.0 (OASIS standard, 2019)
// control packets, the part a publisher and a subscriber need. A packet is
// a fixed header (type and flags, then the remaining length as a variable
// byte integer, section 2.2 / 1.5.5), a variable header and a payload.

// MQTT control packet types (3.1.1 section 2.2.1, 5.0 section 2.1.2).
const (
	mqttConnect     = 1
	mqttConnack     = 2
	mqttPublish     = 3
	mqttPuback      = 4
	mqttPubrec      = 5
	mqttPubrel      = 6
	mqttPubcomp     = 7
	mqttSubscribe   = 8
	mqttSuback      = 9
	mqttUnsubscribe = 10
	mqttUnsuback    = 11
	mqttPingreq     = 12
	mqttPingresp    = 13
	mqttDisconnect  = 14
	mqttAuth        = 15
)

// mqttHandler receives what an mqttParser decodes. Slices are valid only
// during the call.
type mqttHandler interface {
	// mqttPublish is one PUBLISH: its QoS, DUP flag, packet identifier
	// (QoS > 0), the first min(size, HeaderSize) bytes of its payload
	// (fewer when the topic and properties were too long to keep them),
	// and the payload's length.
	mqttPublish(qos byte, dup bool, id uint16, prefix []byte, size int)
	// mqttPacket is any other packet: type, flags and the first bytes of
	// its body (at most mqttPrefixMax).
	mqttPacket(typ, flags byte, body []byte)
}

// mqttPrefixMax bounds the bytes of a packet's body that are kept: enough
// for any acknowledgement, a CONNACK with properties, and a PUBLISH's
// topic, packet identifier, properties and payload header.
const mqttPrefixMax = 256

// mqttParser decodes the server's side of an MQTT connection incrementally:
// bytes may be split anywhere. It keeps only a packet's first bytes, never
// a whole payload, and it does not allocate.
type mqttParser struct {
	v5     bool
	state  uint8
	fh     [5]byte // fixed header split across reads
	fn     int
	typ    byte
	flags  byte
	length int // remaining length of the current packet
	remain int // body bytes still to come
	need   int // body bytes to keep
	body   [mqttPrefixMax]byte
	bn     int
	// big, when set, keeps packets whole (up to wholeMax), for the
	// control connection (control.go): a PUBLISH's payload is handed over
	// entire.
	big *[]byte
}

const (
	mpFixed = iota
	mpBody
	mpSkip
)

// errMQTTProtocol is a malformed packet from the server.
var errMQTTProtocol = errors.New("mqtt: malformed packet")

// feed decodes p and calls h for each complete packet.
func (mp *mqttParser) feed(p []byte, h mqttHandler) error {
	for len(p) > 0 {
		switch mp.state {
		case mpFixed:
			b := p[0]
			p = p[1:]
			mp.fh[mp.fn] = b
			mp.fn++
			if mp.fn == 1 || b&0x80 != 0 {
				if mp.fn == 5 {
					return errMQTTProtocol
				}
				continue
			}
			n, _, ok := varint(mp.fh[1:mp.fn])
			if !ok {
				return errMQTTProtocol
			}
			mp.typ, mp.flags, mp.fn = mp.fh[0]>>4, mp.fh[0]&0x0f, 0
			mp.length, mp.remain, mp.need, mp.bn = n, n, min(n, mqttPrefixMax), 0
			if mp.big != nil {
				if n > wholeMax {
					return errMQTTProtocol
				}
				mp.need, *mp.big = n, (*mp.big)[:0]
			}
			if n == 0 {
				if err := mp.dispatch(nil, h); err != nil {
					return err
				}
				continue
			}
			mp.state = mpBody
		case mpBody:
			var view []byte
			if big := mp.big; big != nil {
				n := min(mp.need-len(*big), len(p))
				*big = append(*big, p[:n]...)
				p = p[n:]
				if len(*big) < mp.need {
					return nil
				}
				view = *big
			} else if mp.bn == 0 && len(p) >= mp.need {
				view, p = p[:mp.need], p[mp.need:]
			} else {
				n := copy(mp.body[mp.bn:mp.need], p)
				mp.bn += n
				p = p[n:]
				if mp.bn < mp.need {
					return nil
				}
				view = mp.body[:mp.need]
			}
			mp.remain -= mp.need
			mp.state = mpFixed
			if mp.remain > 0 {
				mp.state = mpSkip
			}
			if err := mp.dispatch(view, h); err != nil {
				return err
			}
		case mpSkip:
			n := min(mp.remain, len(p))
			mp.remain -= n
			p = p[n:]
			if mp.remain == 0 {
				mp.state = mpFixed
			}
		}
	}
	return nil
}

// dispatch decodes a packet from its kept body.
func (mp *mqttParser) dispatch(body []byte, h mqttHandler) error {
	if mp.typ != mqttPublish {
		h.mqttPacket(mp.typ, mp.flags, body)
		return nil
	}
	qos := (mp.flags >> 1) & 3
	if qos == 3 || len(body) < 2 {
		return errMQTTProtocol
	}
	off := 2 + int(binary.BigEndian.Uint16(body))
	var id uint16
	if qos > 0 {
		if off+2 > len(body) {
			return errMQTTProtocol
		}
		id = binary.BigEndian.Uint16(body[off:])
		off += 2
	}
	if mp.v5 {
		if off >= len(body) {
			return errMQTTProtocol
		}
		n, w, ok := varint(body[off:])
		if !ok {
			return errMQTTProtocol
		}
		off += w + n
	}
	if off > mp.length {
		return errMQTTProtocol
	}
	size := mp.length - off
	var prefix []byte
	switch {
	case mp.big != nil && off <= len(body):
		prefix = body[off:]
	case off < len(body):
		prefix = body[off:min(len(body), off+min(size, HeaderSize))]
	}
	h.mqttPublish(qos, mp.flags&0x08 != 0, id, prefix, size)
	return nil
}

// varint decodes a variable byte integer (at most 4 bytes): its value and
// width.
func varint(b []byte) (n, width int, ok bool) {
	mul := 1
	for i := 0; i < len(b) && i < 4; i++ {
		n += int(b[i]&0x7f) * mul
		if b[i]&0x80 == 0 {
			return n, i + 1, true
		}
		mul *= 128
	}
	return 0, 0, false
}
