package web

import (
	"bytes"

	"github.com/throng-io/throng/internal/driver"
)

// maxLine bounds one status, header or chunk-size line; a longer one is a
// protocol error (RFC 9112 lets servers and clients set such limits).
const maxLine = 64 << 10

type parseState uint8

const (
	stStatus parseState = iota
	stHeaders
	stBody      // Content-Length body
	stChunkSize // chunked: size line
	stChunkData
	stChunkEnd // CRLF after a chunk's data
	stTrailers
	stUntilClose // body ends when the server closes
	stDone
)

// Parser reads HTTP/1.1 responses incrementally (RFC 9112): status line,
// headers, and a body delimited by Content-Length, chunked encoding or the
// connection's close. It keeps only what it needs (status, framing,
// keep-alive), never the body, and allocates only when a line is split
// across reads and longer than its buffer. It implements driver.WireParser.
// The same parser reads the journeys' responses (h1client.go), which also
// hand it a kept to receive the headers and the body.
type Parser struct {
	state     parseState
	head      bool // response to HEAD: no body whatever the headers say
	status    int
	http10    bool
	keepAlive bool
	sawClose  bool
	sawKeep   bool
	chunked   bool
	hasLength bool
	remaining int64 // body or chunk bytes still expected
	line      []byte
	class     driver.Class
	// keep, when set, receives the response's headers and body (the lean
	// journey client's, h1client.go); nil in the event loop, which keeps
	// nothing.
	keep *kept
}

var _ driver.WireParser = (*Parser)(nil)

// NewParser returns a parser ready for a response to a non-HEAD request.
func NewParser() *Parser {
	p := &Parser{line: make([]byte, 0, 512)}
	p.Reset(false)
	return p
}

// Reset prepares for a new response; head is true for a HEAD request.
func (p *Parser) Reset(head bool) {
	*p = Parser{line: p.line[:0], head: head, keep: p.keep}
}

// Begin implements driver.WireParser.
func (p *Parser) Begin(a driver.Action) {
	head := false
	if ac, ok := a.(*action); ok {
		head = ac.head
	}
	p.Reset(head)
}

// Status returns the status code of the response read so far (0 before the
// status line).
func (p *Parser) Status() int { return p.status }

// Done reports whether a whole response has been read.
func (p *Parser) Done() bool { return p.state == stDone }

// Result implements driver.WireParser.
func (p *Parser) Result() (driver.Class, bool) {
	return p.class, p.keepAlive && p.class != driver.Protocol
}

// fail ends the response as a protocol error.
func (p *Parser) fail() {
	p.class = driver.Protocol
	p.keepAlive = false
	p.state = stDone
}

// EOF implements driver.WireParser: a close ends a body read until close.
func (p *Parser) EOF() bool {
	if p.state == stUntilClose {
		p.state = stDone
		p.keepAlive = false
		return true
	}
	return p.state == stDone
}

// Feed implements driver.WireParser.
func (p *Parser) Feed(b []byte) (int, bool) {
	n := 0
	for n < len(b) && p.state != stDone {
		switch p.state {
		case stBody:
			k := p.skip(len(b)-n, stDone)
			p.keepBody(b[n : n+k])
			n += k
		case stChunkData:
			k := p.skip(len(b)-n, stChunkEnd)
			p.keepBody(b[n : n+k])
			n += k
		case stUntilClose:
			p.keepBody(b[n:])
			n = len(b)
		default:
			line, used, ok := p.nextLine(b[n:])
			n += used
			if !ok {
				return n, p.state == stDone
			}
			p.onLine(line)
		}
	}
	return n, p.state == stDone
}

// keepBody hands body bytes to keep, if any.
func (p *Parser) keepBody(b []byte) {
	if p.keep != nil {
		p.keep.body(b)
	}
}

// skip consumes up to avail body bytes and moves to next when the body (or
// chunk) is complete. It returns how many bytes it consumed.
func (p *Parser) skip(avail int, next parseState) int {
	k := min(int64(avail), p.remaining)
	p.remaining -= k
	if p.remaining == 0 {
		p.state = next
	}
	return int(k)
}

// nextLine returns the next complete line (without CRLF or LF), gathering it
// across calls in p.line. ok is false when more bytes are needed.
func (p *Parser) nextLine(b []byte) (line []byte, used int, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(p.line)+len(b) > maxLine {
			p.fail()
			return nil, len(b), false
		}
		p.line = append(p.line, b...)
		return nil, len(b), false
	}
	used = i + 1
	if len(p.line) > 0 {
		if len(p.line)+used > maxLine {
			p.fail()
			return nil, used, false
		}
		p.line = append(p.line, b[:used]...)
		line = p.line
		p.line = p.line[:0]
	} else {
		line = b[:used]
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, used, true
}

func (p *Parser) onLine(line []byte) {
	switch p.state {
	case stStatus:
		p.onStatus(line)
	case stHeaders:
		if len(line) == 0 {
			p.endHeaders()
			return
		}
		p.onHeader(line)
	case stChunkSize:
		size, ok := parseHex(line)
		if !ok {
			p.fail()
			return
		}
		if size == 0 {
			p.state = stTrailers
			return
		}
		p.remaining = size
		p.state = stChunkData
	case stChunkEnd:
		if len(line) != 0 {
			p.fail()
			return
		}
		p.state = stChunkSize
	case stTrailers:
		if len(line) == 0 {
			p.state = stDone
		}
	}
}

// onStatus parses "HTTP/1.1 200 OK".
func (p *Parser) onStatus(line []byte) {
	if len(line) == 0 && p.status == 0 {
		return // tolerate a stray empty line before the status (RFC 9112 §2.2)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		p.fail()
		return
	}
	switch line[7] {
	case '1':
	case '0':
		p.http10 = true
	default:
		p.fail()
		return
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			p.fail()
			return
		}
		code = code*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' {
		p.fail()
		return
	}
	p.status = code
	p.state = stHeaders
}

func (p *Parser) onHeader(line []byte) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		p.fail()
		return
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	if p.keep != nil {
		p.keep.header(name, value)
	}
	switch {
	case equalFold(name, "content-length"):
		n, ok := parseDecimal(value)
		if !ok || (p.hasLength && n != p.remaining) {
			p.fail()
			return
		}
		p.hasLength = true
		p.remaining = n
	case equalFold(name, "transfer-encoding"):
		// chunked must be the final coding (RFC 9112 §6.1).
		if hasTokenSuffix(value, "chunked") {
			p.chunked = true
		} else {
			p.chunked = false
		}
	case equalFold(name, "connection"):
		if containsToken(value, "close") {
			p.sawClose = true
		}
		if containsToken(value, "keep-alive") {
			p.sawKeep = true
		}
	}
}

func (p *Parser) endHeaders() {
	if p.status >= 100 && p.status < 200 && p.status != 101 {
		// An interim response (100 Continue): the final one follows.
		head := p.head
		p.Reset(head)
		if p.keep != nil {
			p.keep.reset()
		}
		return
	}
	p.keepAlive = !p.sawClose && (!p.http10 || p.sawKeep)
	p.class = statusClass(p.status)
	switch {
	case p.head || p.status == 204 || p.status == 304 || p.status < 200:
		p.state = stDone
	case p.chunked:
		p.state = stChunkSize
	case p.hasLength:
		if p.remaining == 0 {
			p.state = stDone
		} else {
			p.state = stBody
		}
	default:
		p.state = stUntilClose
		p.keepAlive = false
	}
	if p.class == driver.Protocol {
		p.keepAlive = false
	}
}

// equalFold compares an ASCII header name with a lower-case constant.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// containsToken reports whether a comma-separated header value holds token
// (case-insensitive).
func containsToken(v []byte, token string) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		var t []byte
		if i < 0 {
			t, v = v, nil
		} else {
			t, v = v[:i], v[i+1:]
		}
		if equalFold(bytes.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// hasTokenSuffix reports whether the last comma-separated token is token.
func hasTokenSuffix(v []byte, token string) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return equalFold(bytes.TrimSpace(v), token)
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseHex reads a chunk size, ignoring chunk extensions after ';'.
func parseHex(b []byte) (int64, bool) {
	if i := bytes.IndexByte(b, ';'); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}
