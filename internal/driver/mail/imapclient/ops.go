package imapclient

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// appendString appends s as a quoted string or, when it cannot be quoted,
// as a non-synchronizing literal (LITERAL+) or a synchronizing one (sent
// after the server's "+"; not supported here, so an error).
func (ic *Conn) appendString(w []byte, s string) ([]byte, error) {
	if imapwire.Quotable(s) {
		return imapwire.AppendQuoted(w, s), nil
	}
	if !ic.Has(CapLiteralPlus) {
		return w, driver.Errorf(driver.Other, fmt.Errorf("the string %.20q needs a literal and the server lacks LITERAL+", s))
	}
	w = append(w, '{')
	w = strconv.AppendInt(w, int64(len(s)), 10)
	w = append(w, "+}\r\n"...)
	return append(w, s...), nil
}

// Login logs on with LOGIN or AUTHENTICATE PLAIN.
func (ic *Conn) Login(ctx context.Context, user, pass string, plain bool) error {
	if plain {
		resp := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
		if !ic.Has(capKnown) {
			if err := ic.Capability(ctx); err != nil {
				return err
			}
		}
		w := ic.begin()
		w = append(w, "AUTHENTICATE PLAIN"...)
		if ic.Has(CapSASLIR) {
			w = append(w, ' ')
			w = append(w, resp...)
			return ic.run(ctx, "AUTHENTICATE", w, nil)
		}
		ic.deadline(ctx)
		if err := ic.write(append(w, '\r', '\n')); err != nil {
			return ic.ioErr("AUTHENTICATE", err)
		}
		line, err := ic.readLine()
		if err != nil {
			return ic.ioErr("AUTHENTICATE", err)
		}
		if len(line) == 0 || line[0] != '+' {
			return ic.status("AUTHENTICATE", skipTag(line))
		}
		if err := ic.write([]byte(resp + "\r\n")); err != nil {
			return ic.ioErr("AUTHENTICATE", err)
		}
		return ic.wait("AUTHENTICATE", nil)
	}
	w := ic.begin()
	w = append(w, "LOGIN "...)
	w, err := ic.appendString(w, user)
	if err != nil {
		return err
	}
	w = append(w, ' ')
	if w, err = ic.appendString(w, pass); err != nil {
		return err
	}
	return ic.run(ctx, "LOGIN", w, nil)
}

func skipTag(line []byte) []byte {
	for i, c := range line {
		if c == ' ' {
			return line[i+1:]
		}
	}
	return line
}

// Capability asks for the server's capabilities (Has then knows them).
func (ic *Conn) Capability(ctx context.Context) error {
	return ic.run(ctx, "CAPABILITY", append(ic.begin(), "CAPABILITY"...), nil)
}

// Select selects (or examines) a mailbox, with CONDSTORE when asked and
// offered. The connection's mailbox state is reset first.
func (ic *Conn) Select(ctx context.Context, name string, readOnly, condstore bool) error {
	ic.Mailbox, ic.Exists, ic.UIDValidity, ic.UIDNext, ic.ModSeq = "", 0, 0, 0, 0
	w := ic.begin()
	cmd := "SELECT"
	if readOnly {
		cmd = "EXAMINE"
	}
	w = append(w, cmd...)
	w = append(w, ' ')
	w, err := ic.appendString(w, name)
	if err != nil {
		return err
	}
	if condstore && ic.Has(CapCondstore) {
		w = append(w, " (CONDSTORE)"...)
	}
	if err := ic.run(ctx, cmd, w, nil); err != nil {
		return err
	}
	ic.Mailbox = name
	return nil
}

// Simple runs a command made of fixed text and an optional mailbox name.
func (ic *Conn) Simple(ctx context.Context, name, text, mailbox string) error {
	w := ic.begin()
	w = append(w, text...)
	if mailbox != "" {
		w = append(w, ' ')
		var err error
		if w, err = ic.appendString(w, mailbox); err != nil {
			return err
		}
	}
	return ic.run(ctx, name, w, nil)
}

// Noop runs NOOP, which lets the server report changes.
func (ic *Conn) Noop(ctx context.Context) error { return ic.Simple(ctx, "NOOP", "NOOP", "") }

// Create creates a mailbox; one that exists already is fine.
func (ic *Conn) Create(ctx context.Context, name string) error {
	err := ic.Simple(ctx, "CREATE", "CREATE", name)
	if isIMAP(err, "ALREADYEXISTS") {
		return nil
	}
	return err
}

// List returns the names of every mailbox.
func (ic *Conn) List(ctx context.Context) ([]string, error) {
	var names []string
	w := append(ic.begin(), `LIST "" "*"`...)
	err := ic.run(ctx, "LIST", w, func(u *Untagged) error {
		if u.Kw != "LIST" {
			return nil
		}
		u.sc.SkipValue(u.sc.Next()) // attributes
		u.sc.Next()                 // delimiter
		if t := u.sc.Next(); t.Kind != imapwire.Open && t.Kind != imapwire.EOL {
			names = append(names, string(t.Text))
		}
		return nil
	})
	return names, err
}

// Fetched is one message of a FETCH response. Header aliases the read
// buffer and is valid during the handler only.
type Fetched struct {
	Seq, UID, Size uint32
	Seen, Deleted  bool
	ModSeq         uint64
	Header         []byte // a kept BODY[HEADER...] literal or string
	Body           int64  // bytes of a BODY[] (kept or dropped)
}

// Fetch runs "[UID ]FETCH set (items)" and calls fn for every message.
func (ic *Conn) Fetch(ctx context.Context, uid bool, set, items string, fn func(*Fetched)) error {
	w := ic.begin()
	if uid {
		w = append(w, "UID "...)
	}
	w = append(w, "FETCH "...)
	w = append(w, set...)
	w = append(w, ' ')
	w = append(w, items...)
	var f Fetched
	return ic.run(ctx, "FETCH", w, func(u *Untagged) error {
		if u.Kw != "FETCH" {
			return nil
		}
		f = Fetched{Seq: u.Num}
		if !parseFetch(u.sc, &f) {
			return driver.Errorf(driver.Protocol, fmt.Errorf("IMAP FETCH: malformed response for message %d", u.Num))
		}
		if fn != nil {
			fn(&f)
		}
		return nil
	})
}

// parseFetch reads "(NAME value NAME value ...)".
func parseFetch(sc *imapwire.Scanner, f *Fetched) bool {
	if sc.Next().Kind != imapwire.Open {
		return false
	}
	for {
		name := sc.Next()
		switch name.Kind {
		case imapwire.Close:
			return true
		case imapwire.Atom:
		default:
			return false
		}
		v := sc.Next()
		switch {
		case imapwire.EqualFold(name.Text, "UID"):
			n, _ := imapwire.Number(v.Text)
			f.UID = uint32(n)
		case imapwire.EqualFold(name.Text, "RFC822.SIZE"):
			n, _ := imapwire.Number(v.Text)
			f.Size = uint32(n)
		case imapwire.EqualFold(name.Text, "FLAGS"):
			if v.Kind != imapwire.Open {
				return false
			}
			for {
				t := sc.Next()
				if t.Kind == imapwire.Close {
					break
				}
				if t.Kind != imapwire.Atom {
					return false
				}
				f.Seen = f.Seen || imapwire.EqualFold(t.Text, `\SEEN`)
				f.Deleted = f.Deleted || imapwire.EqualFold(t.Text, `\DELETED`)
			}
		case imapwire.EqualFold(name.Text, "MODSEQ"):
			if v.Kind != imapwire.Open {
				return false
			}
			n, _ := imapwire.Number(sc.Next().Text)
			f.ModSeq = uint64(n)
			if sc.Next().Kind != imapwire.Close {
				return false
			}
		case imapwire.HasPrefixFold(name.Text, "BODY[HEADER") || imapwire.HasPrefixFold(name.Text, "RFC822.HEADER"):
			if v.Kind == imapwire.Literal || v.Kind == imapwire.String {
				f.Header = v.Text
			}
		case imapwire.HasPrefixFold(name.Text, "BODY[") || imapwire.EqualFold(name.Text, "RFC822"):
			f.Body = v.Size + int64(len(v.Text))
			if v.Kind == imapwire.Literal {
				f.Body = v.Size
			}
		default:
			if !sc.SkipValue(v) {
				return false
			}
		}
	}
}

// Search runs "UID SEARCH criteria" and returns the UIDs.
func (ic *Conn) Search(ctx context.Context, criteria []byte) ([]uint32, error) {
	var uids []uint32
	w := append(ic.begin(), "UID SEARCH "...)
	w = append(w, criteria...)
	err := ic.run(ctx, "SEARCH", w, func(u *Untagged) error {
		if u.Kw != "SEARCH" {
			return nil
		}
		for {
			t := u.sc.Next()
			if t.Kind != imapwire.Atom {
				return nil
			}
			if n, ok := imapwire.Number(t.Text); ok {
				uids = append(uids, uint32(n))
			}
		}
	})
	return uids, err
}

// Store adds flags to messages by UID: "UID STORE set +FLAGS.SILENT (flags)".
func (ic *Conn) Store(ctx context.Context, set, flags string) error {
	w := append(ic.begin(), "UID STORE "...)
	w = append(w, set...)
	w = append(w, " +FLAGS.SILENT ("...)
	w = append(w, flags...)
	w = append(w, ')')
	return ic.run(ctx, "STORE", w, nil)
}

// Move moves messages by UID: UID MOVE, or COPY + \Deleted + expunge.
//
// A destination that does not exist (NO [TRYCREATE]: the accounts were not
// populated by this run, so their folders may be missing) is created and
// the move tried once more, as mail clients do (RFC 9051 7.1).
func (ic *Conn) Move(ctx context.Context, set, dest string) error {
	err := ic.moveOnce(ctx, set, dest)
	if !isIMAP(err, "TRYCREATE") {
		return err
	}
	if err := ic.Create(ctx, dest); err != nil {
		return err
	}
	return ic.moveOnce(ctx, set, dest)
}

func (ic *Conn) moveOnce(ctx context.Context, set, dest string) error {
	if ic.Has(CapMove) {
		w := append(ic.begin(), "UID MOVE "...)
		w = append(w, set...)
		w = append(w, ' ')
		w, err := ic.appendString(w, dest)
		if err != nil {
			return err
		}
		return ic.run(ctx, "MOVE", w, nil)
	}
	w := append(ic.begin(), "UID COPY "...)
	w = append(w, set...)
	w = append(w, ' ')
	w, err := ic.appendString(w, dest)
	if err != nil {
		return err
	}
	if err := ic.run(ctx, "COPY", w, nil); err != nil {
		return err
	}
	return ic.Remove(ctx, set)
}

// Remove deletes messages by UID: \Deleted, then UID EXPUNGE (or EXPUNGE).
func (ic *Conn) Remove(ctx context.Context, set string) error {
	if err := ic.Store(ctx, set, `\Deleted`); err != nil {
		return err
	}
	if ic.Has(CapUIDPlus) {
		w := append(ic.begin(), "UID EXPUNGE "...)
		return ic.run(ctx, "EXPUNGE", append(w, set...), nil)
	}
	return ic.Simple(ctx, "EXPUNGE", "EXPUNGE", "")
}

// Append stores messages in a mailbox, flagged \Seen and dated date,
// pipelined with LITERAL+ (all commands sent, then every answer read),
// else one at a time after the server's continuation.
func (ic *Conn) Append(ctx context.Context, mailbox string, date time.Time, msgs [][]byte) error {
	first := ic.tag + 1
	for _, m := range msgs {
		w := ic.begin()
		w = append(w, "APPEND "...)
		w, err := ic.appendString(w, mailbox)
		if err != nil {
			return err
		}
		w = append(w, ` (\Seen) "`...)
		w = date.AppendFormat(w, "02-Jan-2006 15:04:05 -0700")
		w = append(w, `" {`...)
		w = strconv.AppendInt(w, int64(len(m)), 10)
		ic.deadline(ctx)
		if ic.Has(CapLiteralPlus) {
			w = append(w, "+}\r\n"...)
			ic.b.w = w[:0]
			if err := ic.write(w); err != nil {
				return ic.ioErr("APPEND", err)
			}
			if err := ic.write(m); err != nil {
				return ic.ioErr("APPEND", err)
			}
			if err := ic.write([]byte("\r\n")); err != nil {
				return ic.ioErr("APPEND", err)
			}
			continue
		}
		w = append(w, "}\r\n"...)
		ic.b.w = w[:0]
		if err := ic.write(w); err != nil {
			return ic.ioErr("APPEND", err)
		}
		line, err := ic.readLine()
		if err != nil {
			return ic.ioErr("APPEND", err)
		}
		if len(line) == 0 || line[0] != '+' {
			return ic.status("APPEND", skipTag(line))
		}
		if err := ic.write(m); err != nil {
			return ic.ioErr("APPEND", err)
		}
		if err := ic.write([]byte("\r\n")); err != nil {
			return ic.ioErr("APPEND", err)
		}
		if err := ic.wait("APPEND", nil); err != nil {
			return err
		}
	}
	if !ic.Has(CapLiteralPlus) {
		return nil
	}
	// Read the answers of the pipelined commands, in order.
	last := ic.tag
	var firstErr error
	for t := first; t <= last; t++ {
		ic.tag = t
		if err := ic.wait("APPEND", nil); err != nil {
			if ic.Broken {
				return err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// Logout says goodbye and closes the connection.
func (ic *Conn) Logout(ctx context.Context) error {
	err := ic.Simple(ctx, "LOGOUT", "LOGOUT", "")
	ic.Close()
	return err
}

// UIDSet formats UIDs as a set "a,b,c" (or "a:b" for a single range).
func UIDSet(uids []uint32) string {
	b := make([]byte, 0, 8*len(uids))
	for i, u := range uids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(u), 10)
	}
	return string(b)
}
