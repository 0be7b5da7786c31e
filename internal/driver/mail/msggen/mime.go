package msggen

import (
	"encoding/hex"
	"strconv"
	"time"
)

// Header names throng puts in the messages it generates.
const (
	// TagHeader names the message's project codename (a search needle).
	TagHeader = "X-Throng-Tag"
	// MarkHeader carries "NONCE.SEQ" on every message the users send: the
	// recipient's session finds it to time the delivery.
	MarkHeader = "X-Throng-Mark"
)

// Spec says what message to generate. The same spec always gives the
// same bytes.
type Spec struct {
	Seed    uint64
	Size    int       // total bytes, exact (headers included)
	From    string    // address
	To      []string  // addresses (the To header; not the SMTP recipients)
	Date    time.Time // Date header
	Mark    string    // MarkHeader value, or ""
	Subject string    // "" draws one from the seed
	ReplyTo string    // In-Reply-To message id, or ""
	Invite  []byte    // an iTIP invitation: the body, as text/calendar (Size is ignored)
}

// PopDate is the base date of populated messages.
var PopDate = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

// Build appends the message described by sp to b: valid MIME
// (RFC 5322 headers, CRLF lines, a text/plain body, or multipart/mixed
// with a text part and a base64 attachment when the message is large),
// exactly sp.Size bytes unless the headers alone are longer. It returns
// the codename index the message names.
func Build(b []byte, sp *Spec) ([]byte, int) {
	r := NewRNG(sp.Seed)
	tag := r.Intn(len(Codenames))
	start := len(b)
	b = append(b, "Date: "...)
	b = sp.Date.AppendFormat(b, time.RFC1123Z)
	b = append(b, "\r\nFrom: "...)
	b = appendName(b, r)
	b = append(b, " <"...)
	b = append(b, sp.From...)
	b = append(b, ">\r\nTo: "...)
	for i, t := range sp.To {
		if i > 0 {
			b = append(b, ",\r\n "...)
		}
		b = append(b, '<')
		b = append(b, t...)
		b = append(b, '>')
	}
	b = append(b, "\r\nSubject: "...)
	if sp.Subject != "" {
		b = append(b, sp.Subject...)
	} else {
		b = appendSubject(b, r)
	}
	b = append(b, "\r\nMessage-ID: <"...)
	b = appendHex(b, sp.Seed)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(sp.Size), 10)
	b = append(b, '@')
	b = append(b, domainOf(sp.From)...)
	b = append(b, ">\r\n"...)
	if sp.ReplyTo != "" {
		b = append(b, "In-Reply-To: "...)
		b = append(b, sp.ReplyTo...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "MIME-Version: 1.0\r\n"+TagHeader+": "...)
	b = append(b, Codenames[tag]...)
	b = append(b, "\r\n"...)
	if sp.Mark != "" {
		b = append(b, MarkHeader+": "...)
		b = append(b, sp.Mark...)
		b = append(b, "\r\n"...)
	}
	if sp.Invite != nil {
		b = append(b, "Content-Type: text/calendar; method=REQUEST; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"...)
		return append(b, sp.Invite...), tag
	}
	left := sp.Size - (len(b) - start)
	if left < 12_000 {
		b = append(b, "Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\n"...)
		return appendBody(b, r, tag, sp.Size-(len(b)-start)), tag
	}
	boundary := "=_throng_" + strconv.FormatUint(sp.Seed&0xffffffffff, 36)
	binary := r.Intn(5) < 3
	b = append(b, "Content-Type: multipart/mixed; boundary=\""...)
	b = append(b, boundary...)
	b = append(b, "\"\r\n\r\nThis is a multi-part message in MIME format.\r\n\r\n--"...)
	b = append(b, boundary...)
	b = append(b, "\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\n"...)
	textAt := len(b)
	name, ctype := "report.csv", "text/csv"
	if binary {
		name, ctype = "document.pdf", "application/pdf"
	}
	tail := "\r\n--" + boundary + "\r\nContent-Type: " + ctype + "; name=\"" + name +
		"\"\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename=\"" + name + "\"\r\n\r\n"
	closing := "\r\n--" + boundary + "--\r\n"
	text := 2000 + r.Intn(6000)
	avail := sp.Size - (textAt - start) - text - len(tail) - len(closing)
	raw := rawFor(avail)
	text += avail - encodedLen(raw)
	b = appendBody(b, r, tag, text)
	b = append(b, tail...)
	b = appendAttachment(b, r, raw, binary)
	b = append(b, closing...)
	return b, tag
}

// appendBody appends a text body of exactly n bytes naming the codename.
func appendBody(b []byte, r *RNG, tag, n int) []byte {
	intro := "Project " + Codenames[tag] + ":\r\n\r\n"
	if n <= len(intro)+2 {
		return appendText(b, r, n)
	}
	b = append(b, intro...)
	return appendText(b, r, n-len(intro))
}

// encodedLen is the length of raw bytes in base64 with a CRLF after every
// 76 characters (and after the last line).
func encodedLen(raw int) int {
	if raw <= 0 {
		return 0
	}
	l := (raw + 2) / 3 * 4
	return l + 2*((l+75)/76)
}

// rawFor is the most raw bytes whose encoding fits in avail.
func rawFor(avail int) int {
	raw := max(0, avail*57/78)
	for raw > 0 && encodedLen(raw) > avail {
		raw--
	}
	for encodedLen(raw+1) <= avail {
		raw++
	}
	return raw
}

func appendName(b []byte, r *RNG) []byte {
	for i := range 2 {
		if i > 0 {
			b = append(b, ' ')
		}
		off := len(b)
		b = append(b, vocab[len(common)+r.Intn(vocabSize-len(common))]...)
		b[off] -= 'a' - 'A'
	}
	return b
}

func appendSubject(b []byte, r *RNG) []byte {
	n := 3 + r.Intn(6)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		off := len(b)
		b = append(b, r.Word()...)
		if i == 0 && b[off] >= 'a' && b[off] <= 'z' {
			b[off] -= 'a' - 'A'
		}
	}
	return b
}

func appendHex(b []byte, v uint64) []byte {
	var x [8]byte
	for i := range x {
		x[i] = byte(v >> (56 - 8*i))
	}
	return hex.AppendEncode(b, x[:])
}

// DefaultDomain is the users' domain unless the scenario says otherwise
// (mail.domain), and the domain of a message id whose sender has none.
const DefaultDomain = "example.test"

// domainOf is addr's domain, or DefaultDomain.
func domainOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			return addr[i+1:]
		}
	}
	return DefaultDomain
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}
