package mail

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// mailboxArg reads a mailbox name argument.
func (c *conn) mailboxArg() (string, bool) {
	name, ok := c.str()
	if !ok || name == "" {
		c.bad("Missing mailbox name.")
		return "", false
	}
	return canonical(name), true
}

// selectCmd handles SELECT and EXAMINE.
func (c *conn) selectCmd(readOnly bool) {
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	c.unselect()
	a := c.acct
	a.mu.Lock()
	box := a.boxes[name]
	if box == nil {
		a.mu.Unlock()
		c.no("NONEXISTENT", "Mailbox doesn't exist: "+name)
		return
	}
	c.box, c.readOnly, c.version = box, readOnly, box.version
	c.view = c.view[:0]
	unseen := 0
	box.each(1, func(r ref) bool {
		c.view = append(c.view, r.uid)
		if unseen == 0 && box.flags(r)&flagSeen == 0 {
			unseen = len(c.view)
		}
		return true
	})
	validity, next := box.uidValidity, box.uidNext
	a.mu.Unlock()
	c.untagged(`FLAGS (\Answered \Flagged \Deleted \Seen \Draft)`)
	c.untagged(`OK [PERMANENTFLAGS (\Answered \Flagged \Deleted \Seen \Draft)] Flags permitted.`)
	c.untagged(itoa(len(c.view)) + " EXISTS")
	c.untagged("0 RECENT")
	if unseen > 0 {
		c.untagged("OK [UNSEEN " + itoa(unseen) + "] First unseen.")
	}
	c.untagged("OK [UIDVALIDITY " + strconv.FormatUint(uint64(validity), 10) + "] UIDs valid")
	c.untagged("OK [UIDNEXT " + strconv.FormatUint(uint64(next), 10) + "] Predicted next UID")
	if readOnly {
		c.okCode("READ-ONLY", "Examine completed.")
	} else {
		c.okCode("READ-WRITE", "Select completed.")
	}
}

func (c *conn) unselect() {
	c.box, c.view = nil, c.view[:0]
}

func (c *conn) create() {
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	name = strings.TrimSuffix(name, "/")
	a := c.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boxes[name] != nil {
		c.no("ALREADYEXISTS", "Mailbox already exists")
		return
	}
	a.boxes[name] = c.st.newMailbox(name)
	c.ok("Create completed.")
}

func (c *conn) delete() {
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	if name == "INBOX" {
		c.no("CANNOT", "INBOX can't be deleted.")
		return
	}
	a := c.acct
	a.mu.Lock()
	box := a.boxes[name]
	delete(a.boxes, name)
	if box != nil {
		box.changed()
	}
	a.mu.Unlock()
	if box == nil {
		c.no("NONEXISTENT", "Mailbox doesn't exist: "+name)
		return
	}
	if c.box == box {
		c.unselect()
	}
	c.ok("Delete completed.")
}

// list handles LIST and LSUB with "*" and "%" patterns ("/" separator).
func (c *conn) list(cmd string) {
	ref, ok1 := c.str()
	pat, ok2 := c.str()
	if !ok1 || !ok2 {
		c.bad(cmd + " needs a reference and a pattern.")
		return
	}
	if pat == "" {
		c.untagged(cmd + ` (\Noselect) "/" ""`)
		c.ok(cmd + " completed.")
		return
	}
	pat = ref + pat
	a := c.acct
	a.mu.Lock()
	names := make([]string, 0, len(a.boxes))
	for n := range a.boxes {
		names = append(names, n)
	}
	a.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		if match(pat, n) {
			c.w.WriteString("* " + cmd + ` (\HasNoChildren) "/" `)
			c.w.Write(imapwire.AppendQuoted(nil, n))
			c.w.WriteString("\r\n")
		}
	}
	c.ok(cmd + " completed.")
}

// match reports whether name matches a LIST pattern: "*" matches
// anything, "%" anything but the "/" separator.
func match(pat, name string) bool {
	if strings.EqualFold(pat, "INBOX") {
		return name == "INBOX"
	}
	if pat == "" {
		return name == ""
	}
	switch pat[0] {
	case '*', '%':
		for i := 0; i <= len(name); i++ {
			if match(pat[1:], name[i:]) {
				return true
			}
			if pat[0] == '%' && i < len(name) && name[i] == '/' {
				return false
			}
		}
		return false
	}
	return name != "" && name[0] == pat[0] && match(pat[1:], name[1:])
}

func (c *conn) status() {
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	a := c.acct
	a.mu.Lock()
	box := a.boxes[name]
	var msgs, unseen int
	var validity, next uint32
	if box != nil {
		msgs, validity, next = box.count(), box.uidValidity, box.uidNext
		box.each(1, func(r ref) bool {
			if box.flags(r)&flagSeen == 0 {
				unseen++
			}
			return true
		})
	}
	a.mu.Unlock()
	if box == nil {
		c.no("NONEXISTENT", "Mailbox doesn't exist: "+name)
		return
	}
	if c.sc.Next().Kind != imapwire.Open {
		c.bad("STATUS needs a list of items.")
		return
	}
	var items []string
	for {
		t := c.sc.Next()
		if t.Kind != imapwire.Atom {
			break
		}
		it := upper(t.Text)
		switch it {
		case "MESSAGES":
			items = append(items, it+" "+itoa(msgs))
		case "RECENT":
			items = append(items, it+" 0")
		case "UIDNEXT":
			items = append(items, it+" "+strconv.FormatUint(uint64(next), 10))
		case "UIDVALIDITY":
			items = append(items, it+" "+strconv.FormatUint(uint64(validity), 10))
		case "UNSEEN":
			items = append(items, it+" "+itoa(unseen))
		default:
			c.bad("Unknown STATUS item " + it)
			return
		}
	}
	c.w.WriteString("* STATUS ")
	c.w.Write(imapwire.AppendQuoted(nil, name))
	c.w.WriteString(" (" + strings.Join(items, " ") + ")\r\n")
	c.ok("Status completed.")
}

// appendCmd handles APPEND mailbox [(flags)] [date] literal.
func (c *conn) appendCmd() {
	name, ok := c.mailboxArg()
	if !ok {
		return
	}
	var flags uint8
	date := time.Now()
	var data []byte
	for data == nil {
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
		case imapwire.String:
			if d, err := time.Parse("_2-Jan-2006 15:04:05 -0700", string(t.Text)); err == nil {
				date = d
			}
		case imapwire.Literal:
			data = bytes.Clone(t.Text)
		default:
			c.bad("APPEND needs a message literal.")
			return
		}
	}
	a := c.acct
	a.mu.Lock()
	box := a.boxes[name]
	var uid, validity uint32
	if box != nil {
		box.add(&message{flags: flags, date: date, body: body{data: data}})
		uid, validity = box.uidNext-1, box.uidValidity
	}
	a.mu.Unlock()
	if box == nil {
		c.no("TRYCREATE", "Mailbox doesn't exist: "+name)
		return
	}
	c.sync(true)
	c.okCode("APPENDUID "+strconv.FormatUint(uint64(validity), 10)+" "+strconv.FormatUint(uint64(uid), 10), "Append completed.")
}

func flagBit(name []byte) uint8 {
	for _, f := range flagNames {
		if imapwire.EqualFold(name, strings.ToUpper(f.name)) {
			return f.bit
		}
	}
	return 0
}

// sync tells the client what changed in the selected mailbox: EXPUNGE for
// messages gone (only when allowed: not during FETCH, STORE or SEARCH)
// and EXISTS for new ones.
func (c *conn) sync(allowExpunge bool) {
	box := c.box
	if box == nil {
		return
	}
	a := c.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.version == box.version {
		return
	}
	if allowExpunge {
		removed := 0
		kept := c.view[:0]
		for i, uid := range c.view {
			if _, ok := box.lookup(uid); ok {
				kept = append(kept, uid)
				continue
			}
			c.untagged(itoa(i+1-removed) + " EXPUNGE")
			removed++
		}
		c.view = kept
		c.version = box.version
	}
	var last uint32
	if len(c.view) > 0 {
		last = c.view[len(c.view)-1]
	}
	n := len(c.view)
	box.each(last+1, func(r ref) bool {
		c.view = append(c.view, r.uid)
		return true
	})
	if len(c.view) > n {
		c.untagged(itoa(len(c.view)) + " EXISTS")
	}
}

// idle handles IDLE: updates are pushed as they happen until DONE.
func (c *conn) idle() {
	// Watch first, then report what changed so far: nothing falls between.
	var ch chan struct{}
	if box := c.box; box != nil {
		ch = make(chan struct{}, 1)
		c.acct.mu.Lock()
		box.watchers[ch] = struct{}{}
		c.acct.mu.Unlock()
		defer func() {
			c.acct.mu.Lock()
			delete(box.watchers, ch)
			c.acct.mu.Unlock()
		}()
	}
	c.w.WriteString("+ idling\r\n")
	c.sync(true)
	if c.w.Flush() != nil {
		c.closing = true
		return
	}
	lines := make(chan error, 1)
	go func() {
		c.nc.SetReadDeadline(time.Now().Add(idleTimeout))
		line, _, _, err := imapwire.ReadLine(c.r, nil, nil, nil, 1)
		if err == nil && !imapwire.EqualFold(bytes.TrimSpace(line), "DONE") {
			err = errNotDone
		}
		lines <- err
	}()
	for {
		select {
		case <-ch:
			c.sync(true)
			if c.w.Flush() != nil {
				c.nc.Close()
				<-lines
				c.closing = true
				return
			}
		case err := <-lines:
			if err == errNotDone {
				c.bad("Expected DONE.")
				return
			}
			if err != nil {
				c.closing = true
				return
			}
			c.ok("Idle completed.")
			return
		}
	}
}

type doneErr struct{}

func (doneErr) Error() string { return "expected DONE" }

var errNotDone error = doneErr{}
