package mail

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/imapwire"
)

// numRange is one range of a sequence set, inclusive.
type numRange struct{ lo, hi uint32 }

// numSet is a parsed sequence set ("1:*,5"), with * resolved.
type numSet []numRange

// parseSet reads a sequence set; star is the value of "*".
func parseSet(text []byte, star uint32) (numSet, bool) {
	var set numSet
	for _, part := range bytes.Split(text, []byte{','}) {
		a, b, isRange := bytes.Cut(part, []byte{':'})
		lo, ok1 := setNum(a, star)
		hi, ok2 := lo, true
		if isRange {
			hi, ok2 = setNum(b, star)
		}
		if !ok1 || !ok2 {
			return nil, false
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		set = append(set, numRange{lo, hi})
	}
	return set, len(set) > 0
}

func setNum(b []byte, star uint32) (uint32, bool) {
	if len(b) == 1 && b[0] == '*' {
		return star, true
	}
	n, ok := imapwire.Number(b)
	if !ok || n == 0 || n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

func (s numSet) contains(n uint32) bool {
	for _, r := range s {
		if n >= r.lo && n <= r.hi {
			return true
		}
	}
	return false
}

// selected returns the sequence numbers (1-based, ascending) the set
// names in the client's view: by UID or by sequence number.
func (c *conn) selected(setText []byte, uid bool) ([]int, bool) {
	n := len(c.view)
	if uid {
		var star uint32
		if n > 0 {
			star = c.view[n-1]
		}
		set, ok := parseSet(setText, star)
		if !ok {
			return nil, false
		}
		lo := set[0].lo
		for _, r := range set {
			lo = min(lo, r.lo)
		}
		var out []int
		for i := sort.Search(n, func(i int) bool { return c.view[i] >= lo }); i < n; i++ {
			if set.contains(c.view[i]) {
				out = append(out, i+1)
			}
		}
		return out, true
	}
	set, ok := parseSet(setText, uint32(n))
	if !ok {
		return nil, false
	}
	var out []int
	for _, r := range set {
		for s := r.lo; s <= r.hi && int(s) <= n; s++ {
			out = append(out, int(s))
		}
	}
	sort.Ints(out)
	k := 0
	for i, s := range out {
		if i == 0 || s != out[k-1] {
			out[k] = s
			k++
		}
	}
	return out[:k], true
}

// msgAt returns the message at sequence number seq (false when expunged
// by another session and not yet reported). The caller holds the lock.
func (c *conn) msgAt(seq int) (ref, bool) {
	return c.box.lookup(c.view[seq-1])
}

// snapshot is one message as a command found it under the lock: its
// bytes are read after the lock is released (a body never changes).
type snapshot struct {
	seq   int
	uid   uint32
	flags uint8
	date  time.Time
	body  body
}

// snapshots returns the messages at the sequence numbers seqs, skipping
// those expunged by another session. The caller holds the lock.
func (c *conn) snapshots(seqs []int) []snapshot {
	out := make([]snapshot, 0, len(seqs))
	for _, seq := range seqs {
		r, ok := c.msgAt(seq)
		if !ok {
			continue
		}
		out = append(out, snapshot{seq: seq, uid: r.uid, flags: c.box.flags(r), date: c.box.date(r), body: c.box.body(r)})
	}
	return out
}

// genPool holds the buffers synthesised messages are generated into: a
// connection holds one only while a command reads messages.
var genPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled bounds the buffers kept in genPool.
const maxPooled = 1 << 20

// reader reads message bodies into one pooled buffer; each bytes call
// overwrites the last synthesised message.
type reader struct{ buf *[]byte }

func newReader() reader { return reader{genPool.Get().(*[]byte)} }

func (r reader) bytes(b body) []byte {
	if b.src == nil {
		return b.data
	}
	*r.buf = b.bytes(*r.buf)
	return *r.buf
}

func (r reader) release() {
	if cap(*r.buf) <= maxPooled {
		genPool.Put(r.buf)
	}
}

// fetchItem is one requested FETCH item.
type fetchItem struct {
	name    string   // UID, FLAGS, RFC822.SIZE, INTERNALDATE, BODY
	section string   // "", HEADER, TEXT, HEADER.FIELDS, HEADER.FIELDS.NOT
	fields  []string // for HEADER.FIELDS[.NOT], upper case
	peek    bool
	partial [2]int64 // offset, count; count < 0: none
	echo    string   // the item name as answered
}

// parseFetchItems reads a FETCH item or a list of them.
func (c *conn) parseFetchItems() ([]fetchItem, bool) {
	t := c.sc.Next()
	var atoms [][]byte
	switch t.Kind {
	case imapwire.Atom:
		atoms = [][]byte{t.Text}
	case imapwire.Open:
		for {
			t = c.sc.Next()
			if t.Kind == imapwire.Close {
				break
			}
			if t.Kind != imapwire.Atom {
				return nil, false
			}
			atoms = append(atoms, t.Text)
		}
	default:
		return nil, false
	}
	var items []fetchItem
	for _, a := range atoms {
		name := strings.ToUpper(string(a))
		switch name {
		case "ALL", "FAST", "FULL":
			items = append(items, fetchItem{name: "FLAGS"}, fetchItem{name: "INTERNALDATE"}, fetchItem{name: "RFC822.SIZE"})
		case "UID", "FLAGS", "RFC822.SIZE", "INTERNALDATE":
			items = append(items, fetchItem{name: name})
		case "RFC822":
			items = append(items, fetchItem{name: "BODY", partial: [2]int64{0, -1}, echo: "RFC822"})
		case "RFC822.HEADER":
			items = append(items, fetchItem{name: "BODY", section: "HEADER", peek: true, partial: [2]int64{0, -1}, echo: "RFC822.HEADER"})
		case "RFC822.TEXT":
			items = append(items, fetchItem{name: "BODY", section: "TEXT", partial: [2]int64{0, -1}, echo: "RFC822.TEXT"})
		default:
			it, ok := parseBodyItem(name)
			if !ok {
				return nil, false
			}
			items = append(items, it)
		}
	}
	return items, true
}

// parseBodyItem reads BODY[section]<partial> or BODY.PEEK[...].
func parseBodyItem(name string) (fetchItem, bool) {
	it := fetchItem{name: "BODY", partial: [2]int64{0, -1}}
	rest, ok := strings.CutPrefix(name, "BODY.PEEK[")
	if ok {
		it.peek = true
	} else if rest, ok = strings.CutPrefix(name, "BODY["); !ok {
		return it, false
	}
	sec, after, ok := strings.Cut(rest, "]")
	if !ok {
		return it, false
	}
	if after != "" {
		p, ok := strings.CutPrefix(after, "<")
		p, ok2 := strings.CutSuffix(p, ">")
		off, cnt, ok3 := strings.Cut(p, ".")
		o, err1 := strconv.ParseInt(off, 10, 64)
		n, err2 := strconv.ParseInt(cnt, 10, 64)
		if !ok || !ok2 || !ok3 || err1 != nil || err2 != nil || o < 0 || n < 0 {
			return it, false
		}
		it.partial = [2]int64{o, n}
	}
	switch {
	case sec == "" || sec == "HEADER" || sec == "TEXT":
		it.section = sec
	case strings.HasPrefix(sec, "HEADER.FIELDS"):
		kind, list, ok := strings.Cut(sec, " ")
		if !ok || (kind != "HEADER.FIELDS" && kind != "HEADER.FIELDS.NOT") {
			return it, false
		}
		it.section = kind
		it.fields = strings.Fields(strings.Trim(list, "()"))
	default:
		return it, false // part numbers are not supported
	}
	it.echo = "BODY[" + sec + "]"
	if it.partial[1] >= 0 {
		it.echo += "<" + strconv.FormatInt(it.partial[0], 10) + ">"
	}
	return it, true
}

// fetch handles FETCH and UID FETCH.
func (c *conn) fetch(uid bool) {
	setText := c.sc.Next().Text
	items, ok := c.parseFetchItems()
	if !ok {
		c.bad("Unsupported or malformed FETCH items (the embedded server serves UID, FLAGS, RFC822.SIZE, INTERNALDATE, RFC822*, BODY[]/HEADER/TEXT/HEADER.FIELDS).")
		return
	}
	c.sync(false)
	seqs, ok := c.selected(setText, uid)
	if !ok {
		c.bad("Malformed sequence set.")
		return
	}
	// Flags are read and \Seen set under the lock; the bytes are written
	// after it, so a long FETCH never holds up deliveries to the account.
	setSeen := false
	if !c.readOnly {
		for _, it := range items {
			setSeen = setSeen || it.name == "BODY" && !it.peek
		}
	}
	a := c.acct
	a.mu.Lock()
	msgs := c.snapshots(seqs)
	if setSeen {
		for _, m := range msgs {
			if m.flags&flagSeen == 0 {
				if r, ok := c.box.lookup(m.uid); ok {
					c.box.setFlags(r, m.flags|flagSeen)
				}
			}
		}
	}
	a.mu.Unlock()
	rd := newReader()
	defer rd.release()
	for _, m := range msgs {
		c.w.WriteString("* " + itoa(m.seq) + " FETCH (")
		first := true
		sep := func() {
			if !first {
				c.w.WriteByte(' ')
			}
			first = false
		}
		if uid {
			sep()
			c.w.WriteString("UID " + strconv.FormatUint(uint64(m.uid), 10))
		}
		var data []byte
		loaded := false
		content := func() []byte {
			if !loaded {
				data, loaded = rd.bytes(m.body), true
			}
			return data
		}
		for _, it := range items {
			switch it.name {
			case "UID":
				if !uid {
					sep()
					c.w.WriteString("UID " + strconv.FormatUint(uint64(m.uid), 10))
				}
			case "FLAGS":
				sep()
				c.w.WriteString("FLAGS (" + flagList(m.flags) + ")")
			case "RFC822.SIZE":
				sep()
				c.w.WriteString("RFC822.SIZE " + itoa(len(content())))
			case "INTERNALDATE":
				sep()
				c.w.WriteString(`INTERNALDATE "` + m.date.Format("02-Jan-2006 15:04:05 -0700") + `"`)
			case "BODY":
				sep()
				data := section(content(), &it)
				c.w.WriteString(it.echo + " {" + itoa(len(data)) + "}\r\n")
				c.w.Write(data)
			}
		}
		if setSeen && m.flags&flagSeen == 0 {
			c.w.WriteString(" FLAGS (" + flagList(m.flags|flagSeen) + ")")
		}
		c.w.WriteString(")\r\n")
	}
	c.ok("Fetch completed.")
}

// section returns the bytes of a BODY item.
func section(data []byte, it *fetchItem) []byte {
	hdrEnd := bytes.Index(data, []byte("\r\n\r\n"))
	if hdrEnd < 0 {
		hdrEnd = len(data)
	} else {
		hdrEnd += 4
	}
	var out []byte
	switch it.section {
	case "":
		out = data
	case "HEADER":
		out = data[:hdrEnd]
	case "TEXT":
		out = data[hdrEnd:]
	default:
		out = headerFields(data[:hdrEnd], it.fields, it.section == "HEADER.FIELDS.NOT")
	}
	if it.partial[1] >= 0 {
		o := min(it.partial[0], int64(len(out)))
		out = out[o:min(o+it.partial[1], int64(len(out)))]
	}
	return out
}

// headerFields returns the header lines (with continuations) whose names
// are (or, with not, are not) in fields, and the blank line.
func headerFields(h []byte, fields []string, not bool) []byte {
	var out []byte
	keep := false
	for len(h) > 0 {
		end := bytes.IndexByte(h, '\n')
		if end < 0 {
			end = len(h) - 1
		}
		line := h[:end+1]
		h = h[end+1:]
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
		if line[0] != ' ' && line[0] != '\t' {
			name, _, _ := bytes.Cut(line, []byte{':'})
			in := false
			for _, f := range fields {
				if imapwire.EqualFold(bytes.TrimSpace(name), f) {
					in = true
					break
				}
			}
			keep = in != not
		}
		if keep {
			out = append(out, line...)
		}
	}
	return append(out, '\r', '\n')
}

func flagList(f uint8) string {
	var parts []string
	for _, fl := range flagNames {
		if f&fl.bit != 0 {
			parts = append(parts, fl.name)
		}
	}
	return strings.Join(parts, " ")
}
