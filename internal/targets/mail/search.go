package mail

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// criterion is one SEARCH key, a tree for NOT, OR and lists.
type criterion struct {
	key  string // TEXT, BODY, HEADER, FLAG, NOTFLAG, LARGER, SMALLER, UID, SEQ, NOT, OR, AND, ALL, BEFORE, ON, SINCE
	arg  []byte // upper-case needle (TEXT, BODY, HEADER value)
	name string // HEADER field name
	flag uint8
	num  int64
	set  numSet
	date time.Time
	kids []*criterion
}

var flagKeys = map[string]struct {
	flag uint8
	not  bool
}{
	"ANSWERED": {flagAnswered, false}, "DELETED": {flagDeleted, false}, "FLAGGED": {flagFlagged, false},
	"SEEN": {flagSeen, false}, "DRAFT": {flagDraft, false},
	"UNANSWERED": {flagAnswered, true}, "UNDELETED": {flagDeleted, true}, "UNFLAGGED": {flagFlagged, true},
	"UNSEEN": {flagSeen, true}, "UNDRAFT": {flagDraft, true}, "NEW": {flagSeen, true}, "OLD": {0, false}, "RECENT": {0, true},
}

var headerKeys = map[string]string{"SUBJECT": "SUBJECT", "FROM": "FROM", "TO": "TO", "CC": "CC", "BCC": "BCC"}

// parseCriterion reads one search key from the scanner.
func (c *conn) parseCriterion() (*criterion, bool) {
	t := c.sc.Next()
	switch t.Kind {
	case imapwire.Open:
		and := &criterion{key: "AND"}
		for c.sc.Peek() != imapwire.Close {
			k, ok := c.parseCriterion()
			if !ok {
				return nil, false
			}
			and.kids = append(and.kids, k)
		}
		c.sc.Next()
		return and, true
	case imapwire.Atom:
	default:
		return nil, false
	}
	key := upper(t.Text)
	arg := func() ([]byte, bool) {
		a := c.sc.Next()
		if a.Kind != imapwire.Atom && a.Kind != imapwire.String && a.Kind != imapwire.Literal {
			return nil, false
		}
		return bytes.ToUpper(a.Text), true
	}
	switch {
	case key == "ALL":
		return &criterion{key: "ALL"}, true
	case key == "TEXT" || key == "BODY":
		a, ok := arg()
		return &criterion{key: key, arg: a}, ok
	case headerKeys[key] != "":
		a, ok := arg()
		return &criterion{key: "HEADER", name: headerKeys[key], arg: a}, ok
	case key == "HEADER":
		n, ok1 := arg()
		a, ok2 := arg()
		return &criterion{key: "HEADER", name: string(n), arg: a}, ok1 && ok2
	case key == "LARGER" || key == "SMALLER":
		a, ok := arg()
		n, ok2 := imapwire.Number(a)
		return &criterion{key: key, num: n}, ok && ok2
	case key == "UID":
		a, ok := arg()
		set, ok2 := parseSet(a, c.lastUID())
		return &criterion{key: "UID", set: set}, ok && ok2
	case key == "NOT":
		k, ok := c.parseCriterion()
		return &criterion{key: "NOT", kids: []*criterion{k}}, ok
	case key == "OR":
		a, ok1 := c.parseCriterion()
		b, ok2 := c.parseCriterion()
		return &criterion{key: "OR", kids: []*criterion{a, b}}, ok1 && ok2
	case key == "BEFORE" || key == "ON" || key == "SINCE":
		a, ok := arg()
		d, err := time.Parse("2-JAN-2006", string(a))
		return &criterion{key: key, date: d}, ok && err == nil
	}
	if f, ok := flagKeys[key]; ok {
		if f.not {
			return &criterion{key: "NOTFLAG", flag: f.flag}, true
		}
		return &criterion{key: "FLAG", flag: f.flag}, true
	}
	if set, ok := parseSet(t.Text, uint32(len(c.view))); ok {
		return &criterion{key: "SEQ", set: set}, true
	}
	return nil, false
}

func (c *conn) lastUID() uint32 {
	if n := len(c.view); n > 0 {
		return c.view[n-1]
	}
	return 0
}

// candidate is a message a SEARCH looks at; its bytes are read at most
// once, and only for criteria that need them.
type candidate struct {
	snapshot
	rd     reader
	data   []byte
	loaded bool
}

func (m *candidate) bytes() []byte {
	if !m.loaded {
		m.data, m.loaded = m.rd.bytes(m.body), true
	}
	return m.data
}

// matches reports whether message m meets k.
func (k *criterion) matches(m *candidate) bool {
	switch k.key {
	case "ALL":
		return true
	case "AND":
		for _, kid := range k.kids {
			if !kid.matches(m) {
				return false
			}
		}
		return true
	case "NOT":
		return !k.kids[0].matches(m)
	case "OR":
		return k.kids[0].matches(m) || k.kids[1].matches(m)
	case "TEXT":
		return containsFold(m.bytes(), k.arg)
	case "BODY":
		data := m.bytes()
		if i := bytes.Index(data, []byte("\r\n\r\n")); i >= 0 {
			return containsFold(data[i+4:], k.arg)
		}
		return false
	case "HEADER":
		data := m.bytes()
		end := bytes.Index(data, []byte("\r\n\r\n"))
		if end < 0 {
			end = len(data)
		}
		v := headerFields(data[:end+2], []string{strings.ToUpper(k.name)}, false)
		if len(v) <= 2 {
			return false
		}
		if _, val, ok := bytes.Cut(v, []byte{':'}); ok {
			return containsFold(val, k.arg)
		}
		return false
	case "FLAG":
		return k.flag == 0 || m.flags&k.flag != 0
	case "NOTFLAG":
		return k.flag != 0 && m.flags&k.flag == 0
	case "LARGER":
		return int64(len(m.bytes())) > k.num
	case "SMALLER":
		return int64(len(m.bytes())) < k.num
	case "UID":
		return k.set.contains(m.uid)
	case "SEQ":
		return k.set.contains(uint32(m.seq))
	case "BEFORE":
		return m.date.Before(k.date)
	case "ON":
		d := m.date.UTC()
		return d.Year() == k.date.Year() && d.YearDay() == k.date.YearDay()
	case "SINCE":
		return !m.date.Before(k.date)
	}
	return false
}

// containsFold reports whether h contains the upper-case needle n,
// ignoring ASCII case. It looks for the needle's first letter in either
// case, each found at most once, so it reads h once whatever h holds.
func containsFold(h, n []byte) bool {
	if len(n) == 0 {
		return true
	}
	up := n[0]
	lo := up
	if 'A' <= up && up <= 'Z' {
		lo = up + 'a' - 'A'
	}
	// next returns the first position of ch at or after from, or -1;
	// cur is the last answer for ch (-2: none yet).
	next := func(ch byte, from, cur int) int {
		if cur == -1 || cur >= from {
			return cur
		}
		if k := bytes.IndexByte(h[from:], ch); k >= 0 {
			return from + k
		}
		return -1
	}
	pu, pl := -2, -1
	if lo != up {
		pl = -2
	}
	for i := 0; i+len(n) <= len(h); {
		pu = next(up, i, pu)
		pl = next(lo, i, pl)
		j := pu
		if j < 0 || (pl >= 0 && pl < j) {
			j = pl
		}
		if j < 0 || j+len(n) > len(h) {
			return false
		}
		if imapwire.EqualFold(h[j:j+len(n)], string(n)) {
			return true
		}
		i = j + 1
	}
	return false
}

// search handles SEARCH and UID SEARCH (with an optional CHARSET).
func (c *conn) search(uid bool) {
	and := &criterion{key: "AND"}
	if c.sc.Peek() == imapwire.Atom {
		save := c.sc
		if t := c.sc.Next(); imapwire.EqualFold(t.Text, "CHARSET") {
			cs := c.sc.Next()
			if !imapwire.EqualFold(cs.Text, "US-ASCII") && !imapwire.EqualFold(cs.Text, "UTF-8") {
				c.no("BADCHARSET (US-ASCII UTF-8)", "Unsupported charset.")
				return
			}
		} else {
			c.sc = save
		}
	}
	c.sync(false)
	for !c.sc.AtEOL() {
		k, ok := c.parseCriterion()
		if !ok {
			c.bad("Unsupported or malformed search criteria.")
			return
		}
		and.kids = append(and.kids, k)
	}
	// The messages are looked at after the lock is released: a search
	// through a large folder never holds up deliveries to the account.
	a := c.acct
	a.mu.Lock()
	seqs := make([]int, len(c.view))
	for i := range seqs {
		seqs[i] = i + 1
	}
	msgs := c.snapshots(seqs)
	a.mu.Unlock()
	rd := newReader()
	defer rd.release()
	var out []byte
	for _, m := range msgs {
		if !and.matches(&candidate{snapshot: m, rd: rd}) {
			continue
		}
		out = append(out, ' ')
		if uid {
			out = strconv.AppendUint(out, uint64(m.uid), 10)
		} else {
			out = strconv.AppendInt(out, int64(m.seq), 10)
		}
	}
	c.w.WriteString("* SEARCH")
	c.w.Write(out)
	c.w.WriteString("\r\n")
	c.ok("Search completed.")
}
