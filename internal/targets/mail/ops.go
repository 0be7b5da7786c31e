package mail

import (
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// store handles [UID] STORE set [+|-]FLAGS[.SILENT] (flags).
func (c *conn) store(uid bool) {
	setText := c.sc.Next().Text
	op := strings.ToUpper(string(c.sc.Next().Text))
	silent := strings.HasSuffix(op, ".SILENT")
	op = strings.TrimSuffix(op, ".SILENT")
	mode := byte('=')
	if strings.HasPrefix(op, "+") || strings.HasPrefix(op, "-") {
		mode, op = op[0], op[1:]
	}
	if op != "FLAGS" {
		c.bad("STORE supports FLAGS only.")
		return
	}
	var flags uint8
	t := c.sc.Next()
	switch t.Kind {
	case imapwire.Open:
		for {
			f := c.sc.Next()
			if f.Kind != imapwire.Atom {
				break
			}
			flags |= flagBit(f.Text)
		}
	case imapwire.Atom:
		flags = flagBit(t.Text)
	default:
		c.bad("STORE needs flags.")
		return
	}
	if c.readOnly {
		c.no("", "Mailbox is read-only.")
		return
	}
	c.sync(false)
	seqs, ok := c.selected(setText, uid)
	if !ok {
		c.bad("Malformed sequence set.")
		return
	}
	a := c.acct
	a.mu.Lock()
	for _, seq := range seqs {
		r, ok := c.msgAt(seq)
		if !ok {
			continue
		}
		f := c.box.flags(r)
		switch mode {
		case '+':
			f |= flags
		case '-':
			f &^= flags
		default:
			f = flags
		}
		c.box.setFlags(r, f)
		if !silent {
			u := ""
			if uid {
				u = "UID " + strconv.FormatUint(uint64(r.uid), 10) + " "
			}
			c.untagged(itoa(seq) + " FETCH (" + u + "FLAGS (" + flagList(f) + "))")
		}
	}
	a.mu.Unlock()
	c.ok("Store completed.")
}

// copyMove handles [UID] COPY and MOVE.
func (c *conn) copyMove(uid, move bool) {
	setText := c.sc.Next().Text
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	if move && c.readOnly {
		c.no("", "Mailbox is read-only.")
		return
	}
	c.sync(false)
	seqs, ok := c.selected(setText, uid)
	if !ok {
		c.bad("Malformed sequence set.")
		return
	}
	a := c.acct
	a.mu.Lock()
	dest := a.boxes[name]
	if dest == nil {
		a.mu.Unlock()
		c.no("TRYCREATE", "Mailbox doesn't exist: "+name)
		return
	}
	moved := map[uint32]bool{}
	for _, seq := range seqs {
		r, ok := c.msgAt(seq)
		if !ok {
			continue
		}
		src := c.box
		dest.add(&message{flags: src.flags(r) &^ flagDeleted, date: src.date(r), body: src.body(r)})
		moved[r.uid] = true
	}
	if move && len(moved) > 0 {
		c.box.removeIf(func(r ref) bool { return moved[r.uid] })
	}
	a.mu.Unlock()
	if move {
		c.sync(true)
		c.ok("Move completed.")
		return
	}
	c.ok("Copy completed.")
}

// expunge handles EXPUNGE and UID EXPUNGE set.
func (c *conn) expunge(uid bool) {
	if c.readOnly {
		c.no("", "Mailbox is read-only.")
		return
	}
	var only numSet
	if uid {
		var ok bool
		if only, ok = parseSet(c.sc.Next().Text, 1<<32-1); !ok {
			c.bad("Malformed UID set.")
			return
		}
	}
	c.removeDeleted(only, true)
	c.ok("Expunge completed.")
}

// removeDeleted removes the \Deleted messages (those in only, when given)
// and, with report, sends the EXPUNGE responses.
func (c *conn) removeDeleted(only numSet, report bool) {
	a := c.acct
	a.mu.Lock()
	box := c.box
	box.removeIf(func(r ref) bool {
		return box.flags(r)&flagDeleted != 0 && (only == nil || only.contains(r.uid))
	})
	a.mu.Unlock()
	if report {
		c.sync(true)
	}
}
