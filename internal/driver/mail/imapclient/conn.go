package imapclient

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

// Capabilities the client uses, as bits (see Has).
const (
	CapIdle uint32 = 1 << iota
	CapLiteralPlus
	CapSASLIR
	CapMove
	CapUIDPlus
	CapCondstore
	CapMultiAppend
	capKnown // the capability list has been read
)

var capNames = map[string]uint32{
	"IDLE": CapIdle, "LITERAL+": CapLiteralPlus, "SASL-IR": CapSASLIR, "MOVE": CapMove,
	"UIDPLUS": CapUIDPlus, "CONDSTORE": CapCondstore, "MULTIAPPEND": CapMultiAppend,
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

// Conn is one IMAP connection of throng's lean client. It is used by
// one goroutine at a time. Any I/O error marks it broken; the session then
// logs on again on a new one.
//
// Its exported fields are read by its user; NC may be wrapped or given
// deadlines between commands, and Broken set when the user saw it fail.
type Conn struct {
	NC      net.Conn
	Timeout time.Duration // bounds every exchange
	In, Out int64         // bytes moved, for the action's Outcome
	Broken  bool          // no command may run on it any more

	// The selected mailbox, as its SELECT or EXAMINE answered.
	Mailbox     string
	Exists      uint32
	UIDValidity uint32
	UIDNext     uint32
	ModSeq      uint64 // HIGHESTMODSEQ (CONDSTORE), 0 without

	b    *ioBufs // nil between actions
	sc   imapwire.Scanner
	tag  uint32
	caps uint32
	bye  string // text of an untagged BYE
}

// Untagged is one untagged response handed to a command's handler, the
// scanner positioned after its keyword.
type Untagged struct {
	Num uint32 // N of "* N EXISTS", "* N FETCH"
	Kw  string // upper-case keyword: "FETCH", "SEARCH", "LIST", "STATUS", ...
	sc  *imapwire.Scanner
}

// Handler is given each untagged response of a command.
type Handler func(u *Untagged) error

// Dial connects to addr, speaks TLS at once when tlsCfg is not nil,
// reads the greeting and returns the connection (buffers held: Release
// them when the action is over). A greeting other than OK or PREAUTH is
// an error; a failure to connect is class dial, a failed handshake class
// tls (timeout when it timed out). timeout bounds every exchange.
func Dial(ctx context.Context, addr string, timeout time.Duration, tlsCfg *tls.Config) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, driver.Errorf(driver.Dial, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc = rawsock.Quiet(nc)
	if tlsCfg != nil {
		tc := tls.Client(nc, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			if driver.Classify(err) == driver.Timeout {
				return nil, driver.Errorf(driver.Timeout, err)
			}
			return nil, driver.Errorf(driver.TLS, err)
		}
		nc = tc
	}
	ic := &Conn{NC: nc, Timeout: timeout}
	ic.Acquire()
	ic.deadline(ctx)
	line, err := ic.readLine()
	if err != nil {
		ic.Close()
		return nil, ic.ioErr("greeting", err)
	}
	ic.sc.Reset(line)
	if t := ic.sc.Next(); t.Kind != imapwire.Atom || string(t.Text) != "*" {
		ic.Close()
		return nil, driver.Errorf(driver.Protocol, fmt.Errorf("IMAP greeting %q is not untagged", driver.Clip(line)))
	}
	st := ic.sc.Next()
	switch {
	case imapwire.EqualFold(st.Text, "OK"), imapwire.EqualFold(st.Text, "PREAUTH"):
		ic.respCode()
		return ic, nil
	case imapwire.EqualFold(st.Text, "BYE"):
		ic.Close()
		return nil, driver.Errorf(driver.Status5xx, fmt.Errorf("IMAP server refused the connection: %s", driver.Clip(ic.sc.Rest())))
	}
	ic.Close()
	return nil, driver.Errorf(driver.Protocol, fmt.Errorf("IMAP greeting %q", driver.Clip(line)))
}

// Acquire takes buffers from the pool for the duration of an action.
func (ic *Conn) Acquire() {
	if ic.b == nil {
		ic.b = bufPool.Get().(*ioBufs)
		ic.b.r.Reset(ic.NC)
	}
}

// Release gives the buffers back when nothing is left unread in them.
func (ic *Conn) Release() {
	if ic.b != nil && ic.b.r.Buffered() == 0 {
		if cap(ic.b.line) > 4*keepLiteral {
			ic.b.line = make([]byte, 0, 1024)
		}
		ic.b.r.Reset(nil)
		bufPool.Put(ic.b)
		ic.b = nil
	}
}

// Close closes the connection without LOGOUT and marks it broken.
func (ic *Conn) Close() {
	ic.Broken = true
	ic.NC.Close()
	if ic.b != nil {
		ic.b.r.Reset(nil)
		bufPool.Put(ic.b)
		ic.b = nil
	}
}

// deadline bounds the next exchange by the timeout and ctx's deadline.
func (ic *Conn) deadline(ctx context.Context) {
	d := time.Now().Add(ic.Timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	ic.NC.SetDeadline(d)
}

func (ic *Conn) readLine() ([]byte, error) {
	line, n, _, err := imapwire.ReadLine(ic.b.r, ic.b.line, imapwire.KeepUpTo(keepLiteral), nil, 0)
	ic.In += n
	ic.b.line = line[:0]
	return line, err
}

func (ic *Conn) write(p []byte) error {
	n, err := ic.NC.Write(p)
	ic.Out += int64(n)
	return err
}

// ioErr marks the connection broken and classifies a network error.
func (ic *Conn) ioErr(what string, err error) error {
	ic.Broken = true
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
func (ic *Conn) begin() []byte {
	ic.Acquire()
	ic.tag++
	w := append(ic.b.w[:0], 'A')
	w = strconv.AppendUint(w, uint64(ic.tag), 10)
	return append(w, ' ')
}

// run sends the command in w (without CRLF) and reads until its tagged
// status, giving untagged responses to h (nil: the generic ones only).
// A NO or BAD is returned as an *imapError wrapped with its class.
func (ic *Conn) run(ctx context.Context, name string, w []byte, h Handler) error {
	if ic.Broken {
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
func (ic *Conn) wait(name string, h Handler) error {
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
		ic.Broken = true
		return driver.Errorf(driver.Protocol, fmt.Errorf("IMAP %s: unexpected line %q", name, driver.Clip(line)))
	}
}

// status reads "OK|NO|BAD [code] text" of a tagged response.
func (ic *Conn) status(name string, rest []byte) error {
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
	ic.Broken = true
	return driver.Errorf(driver.Protocol, fmt.Errorf("IMAP %s: bad status %q", name, driver.Clip(rest)))
}

// untagged handles the responses every command may see, then gives the
// response to h.
func (ic *Conn) untagged(line []byte, h Handler) error {
	sc := &ic.sc
	sc.Reset(line[2:])
	t := sc.Next()
	u := Untagged{sc: sc}
	if n, ok := imapwire.Number(t.Text); ok && t.Kind == imapwire.Atom {
		u.Num = uint32(n)
		t = sc.Next()
		switch {
		case imapwire.EqualFold(t.Text, "EXISTS"):
			ic.Exists = u.Num
			u.Kw = "EXISTS"
		case imapwire.EqualFold(t.Text, "EXPUNGE"):
			if ic.Exists > 0 {
				ic.Exists--
			}
			u.Kw = "EXPUNGE"
		case imapwire.EqualFold(t.Text, "FETCH"):
			u.Kw = "FETCH"
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
		u.Kw = upper(t.Text)
	}
	if h != nil {
		return h(&u)
	}
	return nil
}

// respCode reads an optional "[CODE args]" and keeps what the client
// tracks; it returns the code's name.
func (ic *Conn) respCode() string {
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
			ic.UIDValidity = uint32(n)
		}
	case "UIDNEXT":
		if n, ok := imapwire.Number(arg.Text); ok {
			ic.UIDNext = uint32(n)
		}
	case "HIGHESTMODSEQ":
		if n, ok := imapwire.Number(arg.Text); ok {
			ic.ModSeq = uint64(n)
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
func (ic *Conn) readCaps() {
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

// Has reports whether the server announced capability c (one of the Cap
// bits), in its greeting or its CAPABILITY answer.
func (ic *Conn) Has(c uint32) bool { return ic.caps&c != 0 }

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
