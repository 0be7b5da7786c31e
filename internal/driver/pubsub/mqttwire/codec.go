// Package mqttwire is the MQTT 3.1.1 and 5.0 wire format, the part a
// publisher and a subscriber need: an incremental decoder of what the
// broker sends (Parser), the packets the client builds, and the reading of
// the broker's refusals (CONNACK, SUBACK, DISCONNECT) as classified errors.
// It holds no connection state: package pubsub's MQTT session feeds it.
package mqttwire

import (
	"encoding/binary"
	"errors"

	"github.com/throng-io/throng/internal/driver/pubsub/wirelimit"
)

// MQTT 3.1.1 (OASIS standard, 2014) and MQTT 5.0 (OASIS standard, 2019)
// control packets, the part a publisher and a subscriber need. A packet is
// a fixed header (type and flags, then the remaining length as a variable
// byte integer, section 2.2 / 1.5.5), a variable header and a payload.

// MQTT control packet types (3.1.1 section 2.2.1, 5.0 section 2.1.2).
const (
	Connect     = 1
	Connack     = 2
	Publish     = 3
	Puback      = 4
	Pubrec      = 5
	Pubrel      = 6
	Pubcomp     = 7
	Subscribe   = 8
	Suback      = 9
	Unsubscribe = 10
	Unsuback    = 11
	Pingreq     = 12
	Pingresp    = 13
	Disconnect  = 14
	Auth        = 15
)

// Handler receives what an Parser decodes. Slices are valid only
// during the call.
type Handler interface {
	// Publish is one PUBLISH: its QoS, DUP flag, packet identifier
	// (QoS > 0), the first min(size, wirelimit.Prefix) bytes of its payload
	// (fewer when the topic and properties were too long to keep them),
	// and the payload's length.
	Publish(qos byte, dup bool, id uint16, prefix []byte, size int)
	// Packet is any other packet: type, flags and the first bytes of
	// its body (at most PrefixMax).
	Packet(typ, flags byte, body []byte)
}

// PrefixMax bounds the bytes of a packet's body that are kept: enough
// for any acknowledgement, a CONNACK with properties, and a PUBLISH's
// topic, packet identifier, properties and payload header.
const PrefixMax = 256

// Parser decodes the server's side of an MQTT connection incrementally:
// bytes may be split anywhere. It keeps only a packet's first bytes, never
// a whole payload, and it does not allocate.
type Parser struct {
	V5     bool
	state  uint8
	fh     [5]byte // fixed header split across reads
	fn     int
	typ    byte
	flags  byte
	length int // remaining length of the current packet
	remain int // body bytes still to come
	need   int // body bytes to keep
	body   [PrefixMax]byte
	bn     int
	// Big, when set, keeps packets whole (up to wirelimit.Whole), for
	// pubsub's control connection: a PUBLISH's payload is handed over
	// entire.
	Big *[]byte
}

const (
	mpFixed = iota
	mpBody
	mpSkip
)

// ErrProtocol is a malformed packet from the server.
var ErrProtocol = errors.New("mqtt: malformed packet")

// Feed decodes p and calls h for each complete packet.
func (mp *Parser) Feed(p []byte, h Handler) error {
	for len(p) > 0 {
		switch mp.state {
		case mpFixed:
			b := p[0]
			p = p[1:]
			mp.fh[mp.fn] = b
			mp.fn++
			if mp.fn == 1 || b&0x80 != 0 {
				if mp.fn == 5 {
					return ErrProtocol
				}
				continue
			}
			n, _, ok := varint(mp.fh[1:mp.fn])
			if !ok {
				return ErrProtocol
			}
			mp.typ, mp.flags, mp.fn = mp.fh[0]>>4, mp.fh[0]&0x0f, 0
			mp.length, mp.remain, mp.need, mp.bn = n, n, min(n, PrefixMax), 0
			if mp.Big != nil {
				if n > wirelimit.Whole {
					return ErrProtocol
				}
				mp.need, *mp.Big = n, (*mp.Big)[:0]
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
			if big := mp.Big; big != nil {
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
func (mp *Parser) dispatch(body []byte, h Handler) error {
	if mp.typ != Publish {
		h.Packet(mp.typ, mp.flags, body)
		return nil
	}
	qos := (mp.flags >> 1) & 3
	if qos == 3 || len(body) < 2 {
		return ErrProtocol
	}
	off := 2 + int(binary.BigEndian.Uint16(body))
	var id uint16
	if qos > 0 {
		if off+2 > len(body) {
			return ErrProtocol
		}
		id = binary.BigEndian.Uint16(body[off:])
		off += 2
	}
	if mp.V5 {
		if off >= len(body) {
			return ErrProtocol
		}
		n, w, ok := varint(body[off:])
		if !ok {
			return ErrProtocol
		}
		off += w + n
	}
	if off > mp.length {
		return ErrProtocol
	}
	size := mp.length - off
	var prefix []byte
	switch {
	case mp.Big != nil && off <= len(body):
		prefix = body[off:]
	case off < len(body):
		prefix = body[off:min(len(body), off+min(size, wirelimit.Prefix))]
	}
	h.Publish(qos, mp.flags&0x08 != 0, id, prefix, size)
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
