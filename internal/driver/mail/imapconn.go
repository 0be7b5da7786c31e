package mail

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/imapwire"
	"github.com/throng-io/throng/internal/rawsock"
)

// Capabilities the client uses, as bits.
const (
	capIdle uint32 = 1 << iota
	capLiteralPlus
	capSASLIR
	capMove
	capUIDPlus
	capCondstore
	capMultiAppend
	capKnown // the capability list has been read
)

var capNames = map[string]uint32{
	"IDLE": capIdle, "LITERAL+": capLiteralPlus, "SASL-IR": capSASLIR, "MOVE": capMove,
	"UIDPLUS": capUIDPlus, "CONDSTORE": capCondstore, "MULTIAPPEND": capMultiAppend,
}

// keepLiteral is the largest literal a response keeps (header fields);
// bodies are larger and only counted.
const keepLiteral = 16 << 10

// ioBufs are a connection's buffers. Between actions a connection gives
// them back to a pool, so an idle logged-on user holds none.
type ioBufs struct {
	r    *bufio.Reader
	line []byte
	w    []byte
}

var bufPool = sync.Pool{New: func() any {
	return &ioBufs{r: bufio.NewReaderSize(nil, 4096), line: make([]byte, 0, 1024), w: make([]byte, 0, 256)}
}}

// imapConn is one IMAP connection of throng's lean client. It is used by
// one goroutine at a time. Any I/O error marks it broken; the session then
// logs on again on a new one.
type imapConn struct {
	nc      net.Conn
	b       *ioBufs // nil between actions
	sc      imapwire.Scanner
	tag     uint32
	caps    uint32
	timeout time.Duration
	in, out int64 // bytes moved, for the action's Outcome
	broken  bool
	bye     string // text of an untagged BYE

	// The selected mailbox.
	mailbox     string
	exists      uint32
	uidValidity uint32
	uidNext     uint32
	modseq      uint64
}

// untagged is one untagged response handed to a command's handler, the
// scanner positioned after its keyword.
type untagged struct {
	num uint32 // N of "* N EXISTS", "* N FETCH"
	kw  string // upper-case keyword: "FETCH", "SEARCH", "LIST", "STATUS", ...
	sc  *imapwire.Scanner
}

type handler func(u *untagged) error

// dialIMAP connects, reads the greeting and returns the connection
// (buffers held). A greeting other than OK or PREAUTH is an error.
func (c *Config) dialIMAP(ctx context.Context) (*imapConn, error) {
	d := net.Dialer{Timeout: c.Timeout.D()}
	nc, err := d.DialContext(ctx, "tcp", c.imapAddr)
	if err != nil {
		return nil, driver.Errorf(driver.Dial, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc = rawsock.Quiet(nc)
	if c.tls {
		tc := tls.Client(nc, c.tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			if driver.Classify(err) == driver.Timeout {
				return nil, driver.Errorf(driver.Timeout, err)
			}
			return nil, driver.Errorf(driver.TLS, err)
		}
		nc = tc
	}
	ic := &imapConn{nc: nc, timeout: c.Timeout.D()}
	ic.acquire()
	ic.deadline(ctx)
	line, err := ic.readLine()
	if err != nil {
		ic.close()
		return nil, ic.ioErr("greeting", err)
	}
	ic.sc.Reset(line)
	if t := ic.sc.Next(); t.Kind != imapwire.Atom || string(t.Text) != "*" {
		ic.close()
		return nil, driver.Errorf(driver.Protocol, fmt.Errorf("IMAP greeting %q is not untagged", driver.Clip(line)))
	}
	st := ic.sc.Next()
	switch {
	case imapwire.EqualFold(st.Text, "OK"), imapwire.EqualFold(st.Text, "PREAUTH"):
		ic.respCode()
		return ic, nil
	case imapwire.EqualFold(st.Text, "BYE"):
		ic.close()
		return nil, driver.Errorf(driver.Status5xx, fmt.Errorf("IMAP server refused the connection: %s", driver.Clip(ic.sc.Rest())))
	}
	ic.close()
	return nil, driver.Errorf(driver.Protocol, fmt.Errorf("IMAP greeting %q", driver.Clip(line)))
}

// acquire takes buffers from the pool for the duration of an action.
func (ic *imapConn) acquire() {
	if ic.b == nil {
		ic.b = bufPool.Get().(*ioBufs)
		ic.b.r.Reset(ic.nc)
	}
}

// release gives the buffers back when nothing is left unread in them.
func (ic *imapConn) release() {
	if ic.b != nil && ic.b.r.Buffered() == 0 {
		if cap(ic.b.line) > 4*keepLiteral {
			ic.b.line = make([]byte, 0, 1024)
		}
		ic.b.r.Reset(nil)
		bufPool.Put(ic.b)
		ic.b = nil
	}
}

func (ic *imapConn) close() {
	ic.broken = true
	ic.nc.Close()
	if ic.b != nil {
		ic.b.r.Reset(nil)
		bufPool.Put(ic.b)
		ic.b = nil
	}
}

// deadline bounds the next exchange by the timeout and ctx's deadline.
func (ic *imapConn) deadline(ctx context.Context) {
	d := time.Now().Add(ic.timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	ic.nc.SetDeadline(d)
}

func (ic *imapConn) readLine() ([]byte, error) {
	line, n, _, err := imapwire.ReadLine(ic.b.r, ic.b.line, imapwire.KeepUpTo(keepLiteral), nil, 0)
	ic.in += n
	ic.b.line = line[:0]
	return line, err
}

func (ic *imapConn) write(p []byte) error {
	n, err := ic.nc.Write(p)
	ic.out += int64(n)
	return err
}

// ioErr marks the connection broken and classifies a network error.
func (ic *imapConn) ioErr(what string, err error) error {
	ic.broken = true
	c := driver.Classify(err)
	if c == driver.Other {
		c = driver.IO
	}
	if ic.bye != "" {
		err = fmt.Errorf("%w (server said BYE %s)", err, ic.bye)
	}
	return driver.Errorf(c, fmt.Errorf("IMAP %s: %w", what, err))
}

// begin starts a command in the write buffer: "TAG ".
func (ic *imapConn) begin() []byte {
	ic.acquire()
	ic.tag++
	w := append(ic.b.w[:0], 'A')
	w = strconv.AppendUint(w, uint64(ic.tag), 10)
	return append(w, ' ')
}

// run sends the command in w (without CRLF) and reads until its tagged
// status, giving untagged responses to h (nil: the generic ones only).
// A NO or BAD is returned as an *imapError wrapped with its class.
func (ic *imapConn) run(ctx context.Context, name string, w []byte, h handler) error {
	if ic.broken {
		return driver.Errorf(driver.IO, errors.New("IMAP connection is closed"))
	}
	ic.deadline(ctx)
	w = append(w, '\r', '\n')
	ic.b.w = w[:0]
	if err := ic.write(w); err != nil {
		return ic.ioErr(name, err)
	}
	return ic.wait(name, h)
}

// wait reads responses until the tagged status of the current tag.
func (ic *imapConn) wait(name string, h handler) error {
	var tag [16]byte
	t := append(tag[:0], 'A')
	t = strconv.AppendUint(t, uint64(ic.tag), 10)
	for {
		line, err := ic.readLine()
		if err != nil {
			return ic.ioErr(name, err)
		}
		if len(line) >= 2 && line[0] == '*' && line[1] == ' ' {
			if err := ic.untagged(line, h); err != nil {
				return err
			}
			continue
		}
		if len(line) > 0 && line[0] == '+' {
			continue // a continuation nobody asked for: ignore
		}
		if len(line) > len(t) && string(line[:len(t)]) == string(t) && line[len(t)] == ' ' {
			return ic.status(name, line[len(t)+1:])
		}
		ic.broken = true
		return driver.Errorf(driver.Protocol, fmt.Errorf("IMAP %s: unexpected line %q", name, driver.Clip(line)))
	}
}

// status reads "OK|NO|BAD [code] text" of a tagged response.
func (ic *imapConn) status(name string, rest []byte) error {
	ic.sc.Reset(rest)
	st := ic.sc.Next()
	switch {
	case imapwire.EqualFold(st.Text, "OK"):
		ic.respCode()
		return nil
	case imapwire.EqualFold(st.Text, "NO"), imapwire.EqualFold(st.Text, "BAD"):
		code := ic.respCode()
		e := &imapError{cmd: name, status: string(st.Text), code: code, text: string(driver.Clip(ic.sc.Rest()))}
		return driver.Errorf(e.class(), e)
	}
	ic.broken = true
	return driver.Errorf(driver.Protocol, fmt.Errorf("IMAP %s: bad status %q", name, driver.Clip(rest)))
}

// untagged handles the responses every command may see, then gives the
// response to h.
func (ic *imapConn) untagged(line []byte, h handler) error {
	sc := &ic.sc
	sc.Reset(line[2:])
	t := sc.Next()
	u := untagged{sc: sc}
	if n, ok := imapwire.Number(t.Text); ok && t.Kind == imapwire.Atom {
		u.num = uint32(n)
		t = sc.Next()
		switch {
		case imapwire.EqualFold(t.Text, "EXISTS"):
			ic.exists = u.num
			u.kw = "EXISTS"
		case imapwire.EqualFold(t.Text, "EXPUNGE"):
			if ic.exists > 0 {
				ic.exists--
			}
			u.kw = "EXPUNGE"
		case imapwire.EqualFold(t.Text, "FETCH"):
			u.kw = "FETCH"
		default:
			return nil // RECENT and others
		}
	} else {
		switch {
		case imapwire.EqualFold(t.Text, "OK"), imapwire.EqualFold(t.Text, "NO"), imapwire.EqualFold(t.Text, "BAD"):
			ic.respCode()
			return nil
		case imapwire.EqualFold(t.Text, "BYE"):
			ic.bye = string(driver.Clip(sc.Rest()))
			return nil
		case imapwire.EqualFold(t.Text, "CAPABILITY"):
			ic.readCaps()
			return nil
		}
		u.kw = upper(t.Text)
	}
	if h != nil {
		return h(&u)
	}
	return nil
}

// respCode reads an optional "[CODE args]" and keeps what the client
// tracks; it returns the code's name.
func (ic *imapConn) respCode() string {
	rest := ic.sc.Rest()
	if len(rest) == 0 || rest[0] != '[' {
		return ""
	}
	end := 1
	for end < len(rest) && rest[end] != ']' {
		end++
	}
	var sc imapwire.Scanner
	sc.Reset(rest[1:end])
	name := sc.Next()
	code := upper(name.Text)
	arg := sc.Next()
	switch code {
	case "UIDVALIDITY":
		if n, ok := imapwire.Number(arg.Text); ok {
			ic.uidValidity = uint32(n)
		}
	case "UIDNEXT":
		if n, ok := imapwire.Number(arg.Text); ok {
			ic.uidNext = uint32(n)
		}
	case "HIGHESTMODSEQ":
		if n, ok := imapwire.Number(arg.Text); ok {
			ic.modseq = uint64(n)
		}
	case "CAPABILITY":
		saved := ic.sc
		ic.sc.Reset(rest[1+len(name.Text) : end])
		ic.readCaps()
		ic.sc = saved
	}
	if end < len(rest) {
		end++
	}
	ic.sc.Reset(rest[end:])
	return code
}

// readCaps reads a capability list from the scanner.
func (ic *imapConn) readCaps() {
	ic.caps = capKnown
	for {
		t := ic.sc.Next()
		if t.Kind != imapwire.Atom {
			return
		}
		if bit, ok := capNames[upper(t.Text)]; ok {
			ic.caps |= bit
		}
	}
}

func (ic *imapConn) has(c uint32) bool { return ic.caps&c != 0 }

// upper returns ASCII text in upper case (short keywords).
func upper(b []byte) string {
	var x [32]byte
	if len(b) > len(x) {
		return string(b)
	}
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		x[i] = c
	}
	return string(x[:len(b)])
}
