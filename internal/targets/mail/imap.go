package mail

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"net"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// Capabilities announced by the embedded IMAP server.
const capabilities = "IMAP4rev1 LITERAL+ SASL-IR AUTH=PLAIN IDLE MOVE UIDPLUS UNSELECT ID ENABLE NAMESPACE"

const (
	// maxLiteral bounds one literal a client sends (an APPEND).
	maxLiteral = 64 << 20
	// idleTimeout closes a connection silent this long (RFC 9051: at
	// least 30 minutes).
	idleTimeout = 31 * time.Minute
)

// conn is one IMAP client connection, served by one goroutine.
type conn struct {
	st       *Store
	nc       net.Conn
	r        *bufio.Reader
	w        *bufio.Writer
	line     []byte
	sc       imapwire.Scanner
	tag      []byte
	acct     *account
	box      *mailbox
	readOnly bool
	view     []uint32 // UIDs the client knows; sequence number = index + 1
	version  uint64   // box.version of the last full synchronisation
	closing  bool
}

// serveIMAP serves one connection until it closes.
func serveIMAP(st *Store, nc net.Conn) {
	c := &conn{st: st, nc: nc, r: bufio.NewReaderSize(nc, 1024), w: bufio.NewWriterSize(nc, 4096)}
	defer c.cleanup()
	c.w.WriteString("* OK [CAPABILITY " + capabilities + "] throng embedded IMAP server ready\r\n")
	if c.w.Flush() != nil {
		return
	}
	for !c.closing {
		nc.SetReadDeadline(time.Now().Add(idleTimeout))
		line, _, _, err := imapwire.ReadLine(c.r, c.line, imapwire.KeepAll, c.continuation, maxLiteral)
		if err != nil {
			if err == imapwire.ErrLineTooLong || bytes.Contains([]byte(err.Error()), []byte("above the limit")) {
				c.w.WriteString("* BYE " + err.Error() + "\r\n")
				c.w.Flush()
			}
			return
		}
		c.handle(line)
		if cap(line) > 1<<20 {
			line = nil // do not keep an APPEND's buffer
		}
		c.line = line[:0]
		if c.w.Flush() != nil {
			return
		}
	}
}

func (c *conn) cleanup() {
	c.unselect()
	c.nc.Close()
}

// continuation answers a synchronizing literal.
func (c *conn) continuation() error {
	c.w.WriteString("+ Ready for literal data\r\n")
	return c.w.Flush()
}

// Replies.
func (c *conn) reply(status, code, text string) {
	c.w.Write(c.tag)
	c.w.WriteByte(' ')
	c.w.WriteString(status)
	if code != "" {
		c.w.WriteString(" [" + code + "]")
	}
	c.w.WriteString(" " + text + "\r\n")
}
func (c *conn) ok(text string)        { c.reply("OK", "", text) }
func (c *conn) no(code, text string)  { c.reply("NO", code, text) }
func (c *conn) bad(text string)       { c.reply("BAD", "", text) }
func (c *conn) untagged(text string)  { c.w.WriteString("* " + text + "\r\n") }
func (c *conn) okCode(code, t string) { c.reply("OK", code, t) }

// handle runs one command line.
func (c *conn) handle(line []byte) {
	c.sc.Reset(line)
	t := c.sc.Next()
	if t.Kind != imapwire.Atom || len(t.Text) > 64 {
		c.tag = append(c.tag[:0], '*')
		c.bad("Missing or bad tag")
		return
	}
	c.tag = append(c.tag[:0], t.Text...)
	cmd := upper(c.sc.Next().Text)
	uid := false
	if cmd == "UID" {
		uid = true
		cmd = upper(c.sc.Next().Text)
	}
	switch cmd {
	case "CAPABILITY":
		c.untagged("CAPABILITY " + capabilities)
		c.ok("Capability completed.")
		return
	case "NOOP", "CHECK":
		c.sync(true)
		c.ok(cmd + " completed.")
		return
	case "LOGOUT":
		c.untagged("BYE Logging out")
		c.ok("Logout completed.")
		c.closing = true
		return
	case "ID":
		c.untagged("ID NIL")
		c.ok("ID completed.")
		return
	case "ENABLE":
		c.untagged("ENABLED")
		c.ok("Enabled.")
		return
	case "LOGIN":
		c.login()
		return
	case "AUTHENTICATE":
		c.authenticate()
		return
	}
	if c.acct == nil {
		c.bad("Log in first.")
		return
	}
	switch cmd {
	case "NAMESPACE":
		c.untagged(`NAMESPACE (("" "/")) NIL NIL`)
		c.ok("Namespace completed.")
		return
	case "SELECT", "EXAMINE":
		c.selectCmd(cmd == "EXAMINE")
		return
	case "CREATE":
		c.create()
		return
	case "DELETE":
		c.delete()
		return
	case "LIST", "LSUB":
		c.list(cmd)
		return
	case "SUBSCRIBE", "UNSUBSCRIBE":
		c.ok(cmd + " completed.")
		return
	case "STATUS":
		c.status()
		return
	case "APPEND":
		c.appendCmd()
		return
	case "IDLE":
		c.idle()
		return
	}
	if c.box == nil {
		c.bad("Select a mailbox first.")
		return
	}
	switch cmd {
	case "FETCH":
		c.fetch(uid)
	case "STORE":
		c.store(uid)
	case "SEARCH":
		c.search(uid)
	case "COPY", "MOVE":
		c.copyMove(uid, cmd == "MOVE")
	case "EXPUNGE":
		c.expunge(uid)
	case "CLOSE":
		if !c.readOnly {
			c.removeDeleted(nil, false)
		}
		c.unselect()
		c.ok("Close completed.")
	case "UNSELECT":
		c.unselect()
		c.ok("Unselect completed.")
	default:
		c.bad("Unknown command " + cmd)
	}
}

// str reads an astring argument (atom, quoted string or literal).
func (c *conn) str() (string, bool) {
	t := c.sc.Next()
	switch t.Kind {
	case imapwire.Atom, imapwire.String, imapwire.Literal:
		return string(t.Text), true
	}
	return "", false
}

func (c *conn) login() {
	user, ok1 := c.str()
	pass, ok2 := c.str()
	if !ok1 || !ok2 {
		c.bad("LOGIN needs a user name and a password.")
		return
	}
	c.authAs(user, pass)
}

func (c *conn) authAs(user, pass string) {
	if c.acct != nil {
		c.bad("Already logged in.")
		return
	}
	a, err := c.st.login(user, pass)
	if err != nil {
		c.no("AUTHENTICATIONFAILED", "Authentication failed.")
		return
	}
	c.acct = a
	c.okCode("CAPABILITY "+capabilities, "Logged in")
}

// authenticate handles AUTHENTICATE PLAIN, with or without an initial
// response.
func (c *conn) authenticate() {
	mech := upper(c.sc.Next().Text)
	if mech != "PLAIN" {
		c.no("", "Unsupported authentication mechanism.")
		return
	}
	resp, ok := c.str()
	if !ok {
		c.w.WriteString("+ \r\n")
		if c.w.Flush() != nil {
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(time.Minute))
		line, _, _, err := imapwire.ReadLine(c.r, nil, imapwire.KeepAll, nil, 4096)
		if err != nil {
			c.closing = true
			return
		}
		resp = string(line)
	}
	if resp == "*" {
		c.bad("Authentication aborted.")
		return
	}
	raw, err := base64.StdEncoding.DecodeString(resp)
	parts := bytes.Split(raw, []byte{0})
	if err != nil || len(parts) != 3 {
		c.bad("Malformed PLAIN response.")
		return
	}
	c.authAs(string(parts[1]), string(parts[2]))
}

// upper returns ASCII text in upper case.
func upper(b []byte) string {
	return string(bytes.ToUpper(b))
}

func itoa(n int) string { return strconv.Itoa(n) }
