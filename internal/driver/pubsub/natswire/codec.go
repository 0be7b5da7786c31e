// Package natswire is the NATS client protocol's wire format, the part a
// publisher and a subscriber need: an incremental decoder of what the
// server sends (Parser), the commands the client builds, and the reading
// of the server's -ERR lines as classified errors. It holds no connection
// state: package pubsub's NATS session feeds it.
package natswire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub/wirelimit"
)

// The NATS client protocol, the part a publisher and a subscriber need
// (https://docs.nats.io/reference/reference-protocols/nats-protocol):
// the server sends INFO, MSG, HMSG, PING, PONG, +OK and -ERR; the client
// sends CONNECT, PUB, SUB, UNSUB, PING and PONG. Lines end in CRLF.

// Handler receives what a Parser decodes. The byte slices are
// valid only during the call.
type Handler interface {
	// Msg is one message: sid is its subscription, prefix the first
	// min(size, wirelimit.Prefix) bytes of its payload, size the payload's length.
	Msg(sid uint32, prefix []byte, size int)
	Ping()
	Pong()
	// Err is a -ERR line's text, quotes removed.
	Err(msg []byte)
}

// lineMax bounds the control lines kept whole (MSG, -ERR): a longer
// MSG line is a protocol error, a longer -ERR is cut. INFO lines, which can
// be long, are skipped without being kept.
const lineMax = 256

// Parser decodes the server's side of a NATS connection incrementally:
// bytes may be split anywhere. It keeps at most one control line and one
// payload prefix, never the payloads, and it does not allocate.
type Parser struct {
	state  uint8
	line   [lineMax]byte // a control line split across reads
	ln     int
	prefix [wirelimit.Prefix]byte // a payload prefix split across reads
	pn     int
	sid    uint32
	size   int // payload length of the current message
	skip   int // payload bytes before the data (HMSG headers)
	remain int // payload bytes left, then 2 for the CRLF
	// Pay, when set, keeps payloads whole (up to wirelimit.Whole) and
	// hands them over entire (pubsub's control connection).
	Pay *[]byte
}

const (
	npLine    = iota // reading a control line
	npSkipEOL        // skipping a long line (INFO) to its LF
	npSkipHdr        // skipping HMSG header bytes
	npPayload        // reading a payload
	npTrailer        // skipping the CRLF after a payload
)

// ErrProtocol is a malformed server line.
var ErrProtocol = errors.New("nats: malformed protocol line")

// Feed decodes p and calls h for each complete item. It returns an error
// for a malformed stream; the connection is then unusable.
func (np *Parser) Feed(p []byte, h Handler) error {
	for len(p) > 0 {
		switch np.state {
		case npLine:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				if np.ln+len(p) > lineMax {
					if np.isInfo(p) {
						np.state, np.ln = npSkipEOL, 0
						return nil
					}
					return ErrProtocol
				}
				np.ln += copy(np.line[np.ln:], p)
				return nil
			}
			line := p[:i+1]
			if np.ln > 0 {
				if np.ln+len(line) > lineMax {
					if !np.isInfo(line) {
						return ErrProtocol
					}
					np.ln = 0
					p = p[i+1:]
					continue
				}
				np.ln += copy(np.line[np.ln:], line)
				line = np.line[:np.ln]
				np.ln = 0
			}
			p = p[i+1:]
			if err := np.control(line, h); err != nil {
				return err
			}
		case npSkipEOL:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				return nil
			}
			p = p[i+1:]
			np.state = npLine
		case npSkipHdr:
			n := min(np.skip, len(p))
			np.skip -= n
			p = p[n:]
			if np.skip == 0 {
				np.state = npPayload
			}
		case npPayload:
			if pay := np.Pay; pay != nil {
				n := min(np.size-len(*pay), len(p))
				*pay = append(*pay, p[:n]...)
				np.remain -= n
				p = p[n:]
				if len(*pay) < np.size {
					return nil
				}
				h.Msg(np.sid, *pay, np.size)
				*pay = (*pay)[:0]
				np.state = npTrailer
				continue
			}
			want := min(np.size, wirelimit.Prefix)
			if np.pn == 0 && len(p) >= want {
				// The whole prefix is here: no copy.
				h.Msg(np.sid, p[:want], np.size)
			} else {
				n := copy(np.prefix[np.pn:want], p)
				np.pn += n
				if np.pn < want {
					np.remain -= n
					return nil
				}
				h.Msg(np.sid, np.prefix[:want], np.size)
				np.pn = 0
				np.remain -= n
				p = p[n:]
				np.state = npTrailer
				continue
			}
			np.state = npTrailer
		case npTrailer:
			n := min(np.remain, len(p))
			np.remain -= n
			p = p[n:]
			if np.remain == 0 {
				np.state = npLine
			}
		}
	}
	return nil
}

// isInfo reports whether the line being read (kept part, then p) is INFO.
func (np *Parser) isInfo(p []byte) bool {
	var head [4]byte
	n := copy(head[:], np.line[:np.ln])
	n += copy(head[n:], p)
	return n == 4 && string(head[:]) == "INFO"
}

// control handles one complete control line (with its CRLF).
func (np *Parser) control(line []byte, h Handler) error {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > lineMax && string(line[:4]) != "INFO" {
		return ErrProtocol // the same whether the line came whole or split
	}
	switch {
	case len(line) >= 4 && string(line[:4]) == "MSG ":
		return np.msg(line[4:], false)
	case len(line) >= 5 && string(line[:5]) == "HMSG ":
		return np.msg(line[5:], true)
	case string(line) == "PING":
		h.Ping()
	case string(line) == "PONG":
		h.Pong()
	case string(line) == "+OK":
	case len(line) >= 4 && string(line[:4]) == "-ERR":
		h.Err(bytes.Trim(bytes.TrimSpace(line[4:]), "'"))
	case len(line) >= 4 && string(line[:4]) == "INFO":
	default:
		return ErrProtocol
	}
	return nil
}

// msg reads "subject sid [reply] size" (MSG) or "subject sid [reply] hdr
// total" (HMSG) and prepares for the payload.
func (np *Parser) msg(args []byte, headers bool) error {
	var f [5][]byte
	n := 0
	for len(args) > 0 && n < len(f) {
		args = bytes.TrimLeft(args, " \t")
		if len(args) == 0 {
			break
		}
		end := bytes.IndexAny(args, " \t")
		if end < 0 {
			end = len(args)
		}
		f[n], args = args[:end], args[end:]
		n++
	}
	minArgs, maxArgs := 3, 4
	if headers {
		minArgs, maxArgs = 4, 5
	}
	if n < minArgs || n > maxArgs || len(bytes.TrimSpace(args)) > 0 {
		return ErrProtocol
	}
	sid, ok := atoi(f[1])
	if !ok || sid > 1<<32-1 {
		return ErrProtocol
	}
	size, ok := atoi(f[n-1])
	if !ok {
		return ErrProtocol
	}
	skip := 0
	if headers {
		if skip, ok = atoi(f[n-2]); !ok || skip > size {
			return ErrProtocol
		}
		size -= skip
	}
	if np.Pay != nil && size > wirelimit.Whole {
		return ErrProtocol
	}
	np.sid, np.size, np.skip, np.remain, np.pn = uint32(sid), size, skip, size+2, 0
	np.state = npPayload
	if skip > 0 {
		np.state = npSkipHdr
	}
	return nil
}

// atoi parses a non-negative decimal integer without allocating.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Info is the part of the server's INFO that a client needs.
type Info struct {
	ServerID     string `json:"server_id"`
	Version      string `json:"version"`
	MaxPayload   int64  `json:"max_payload"`
	TLSRequired  bool   `json:"tls_required"`
	TLSAvailable bool   `json:"tls_available"`
	AuthRequired bool   `json:"auth_required"`
	Headers      bool   `json:"headers"`
	ClientID     uint64 `json:"client_id"` // the connection's id on the server (cid)
}

// ParseInfo decodes an "INFO {...}" line.
func ParseInfo(line []byte) (Info, error) {
	var info Info
	line = bytes.TrimSpace(line)
	js, ok := bytes.CutPrefix(line, []byte("INFO "))
	if !ok {
		return info, fmt.Errorf("nats: the server did not start with INFO (got %.40q): is this a NATS server?", line)
	}
	if err := json.Unmarshal(js, &info); err != nil {
		return info, fmt.Errorf("nats: bad INFO: %v", err)
	}
	return info, nil
}

// Connect is the CONNECT line: verbose off (no +OK per command), echo
// on (a user that subscribes to a subject it publishes on gets its own
// messages, as NATS clients do by default).
func Connect(name, user, pass string, tlsOn bool) []byte {
	type connect struct {
		Verbose  bool   `json:"verbose"`
		Pedantic bool   `json:"pedantic"`
		TLS      bool   `json:"tls_required"`
		Name     string `json:"name"`
		Lang     string `json:"lang"`
		Version  string `json:"version"`
		Protocol int    `json:"protocol"`
		Echo     bool   `json:"echo"`
		User     string `json:"user,omitempty"`
		Pass     string `json:"pass,omitempty"`
	}
	js, _ := json.Marshal(connect{TLS: tlsOn, Name: name, Lang: "go", Version: "throng", Protocol: 1, Echo: true, User: user, Pass: pass})
	return append(append([]byte("CONNECT "), js...), "\r\n"...)
}

// Sub appends "SUB subject sid".
func Sub(b []byte, subject string, sid uint32) []byte {
	b = append(b, "SUB "...)
	b = append(b, subject...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(sid), 10)
	return append(b, "\r\n"...)
}

// Unsub appends "UNSUB sid".
func Unsub(b []byte, sid uint32) []byte {
	b = append(b, "UNSUB "...)
	b = strconv.AppendUint(b, uint64(sid), 10)
	return append(b, "\r\n"...)
}

// PubFrame returns a whole PUB command for payload, and the offset of
// the payload in it (where the header is patched per message).
func PubFrame(subject string, payload []byte) (frame []byte, at int) {
	b := append([]byte("PUB "), subject...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, "\r\n"...)
	at = len(b)
	b = append(b, payload...)
	return append(b, "\r\n"...), at
}

// Ping and Pong are the keep-alive commands, either side.
var (
	Ping = []byte("PING\r\n")
	Pong = []byte("PONG\r\n")
)

// ServerError classifies a -ERR line: refused credentials are Auth, a
// server full (maximum connections) is Dial, a slow consumer is IO, a
// stale connection (unanswered pings) is Timeout.
func ServerError(msg string) error {
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
