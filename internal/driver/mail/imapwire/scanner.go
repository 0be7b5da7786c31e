package imapwire

import (
	"bytes"
	"strconv"
)

// Kind is the kind of a token.
type Kind uint8

// Token kinds.
const (
	EOL     Kind = iota // end of the line
	Atom                // an atom, a number, a flag (\Seen), NIL, a sequence set, BODY[...]<n>
	String              // a quoted string, unescaped
	Literal             // a literal; Dropped when its bytes were not kept
	Open                // (
	Close               // )
	Bad                 // malformed input
)

// Token is one token of a line. Its Text aliases the line or the scanner's
// scratch buffer and is valid until the next call to Next.
type Token struct {
	Kind    Kind
	Text    []byte // atom text, string value or literal bytes
	Size    int64  // literal size
	Dropped bool   // a literal whose bytes were not kept
}

// Scanner splits a logical line (from ReadLine) into tokens.
type Scanner struct {
	p       []byte
	i       int
	scratch []byte
}

// Reset starts scanning line.
func (s *Scanner) Reset(line []byte) { s.p, s.i = line, 0 }

// Rest returns the unscanned part of the line, leading spaces removed
// (for response text after a status).
func (s *Scanner) Rest() []byte {
	for s.i < len(s.p) && s.p[s.i] == ' ' {
		s.i++
	}
	return s.p[s.i:]
}

// AtEOL reports whether only spaces are left.
func (s *Scanner) AtEOL() bool { return len(s.Rest()) == 0 }

// Next returns the next token, skipping one or more spaces before it.
func (s *Scanner) Next() Token {
	p := s.p
	for s.i < len(p) && p[s.i] == ' ' {
		s.i++
	}
	if s.i >= len(p) {
		return Token{Kind: EOL}
	}
	switch c := p[s.i]; c {
	case '(':
		s.i++
		return Token{Kind: Open}
	case ')':
		s.i++
		return Token{Kind: Close}
	case '"':
		return s.quoted()
	case '{':
		return s.literal()
	default:
		return s.atom()
	}
}

// Peek returns the kind of the next token without consuming it.
func (s *Scanner) Peek() Kind {
	i := s.i
	t := s.Next()
	s.i = i
	return t.Kind
}

// atom reads up to a space, a paren, or the end; brackets are kept whole
// (BODY[HEADER.FIELDS (A B)]) and may be followed by a partial <a.b>.
func (s *Scanner) atom() Token {
	p := s.p
	start := s.i
	depth := 0
	for s.i < len(p) {
		c := p[s.i]
		if depth == 0 && (c == ' ' || c == '(' || c == ')' || c == '\r' || c == '\n') {
			break
		}
		if c == '[' {
			depth++
		} else if c == ']' && depth > 0 {
			depth--
		}
		s.i++
	}
	if s.i == start {
		s.i++
		return Token{Kind: Bad, Text: p[start:s.i]}
	}
	return Token{Kind: Atom, Text: p[start:s.i]}
}

func (s *Scanner) quoted() Token {
	p := s.p
	s.i++ // opening quote
	start := s.i
	esc := false
	for s.i < len(p) {
		c := p[s.i]
		if c == '\\' {
			esc = true
			s.i += 2
			continue
		}
		if c == '"' {
			text := p[start:s.i]
			s.i++
			if esc {
				s.scratch = s.scratch[:0]
				for j := 0; j < len(text); j++ {
					if text[j] == '\\' && j+1 < len(text) {
						j++
					}
					s.scratch = append(s.scratch, text[j])
				}
				text = s.scratch
			}
			return Token{Kind: String, Text: text}
		}
		s.i++
	}
	return Token{Kind: Bad}
}

// literal reads "{n}\r\n" + n bytes, or "{!n}\r\n" for a dropped literal.
func (s *Scanner) literal() Token {
	p := s.p
	end := bytes.IndexByte(p[s.i:], '}')
	if end < 0 || s.i+end+2 >= len(p)+1 {
		return s.atom()
	}
	num := p[s.i+1 : s.i+end]
	dropped := false
	if len(num) > 0 && num[0] == '!' {
		dropped, num = true, num[1:]
	}
	size, err := strconv.ParseInt(string(num), 10, 64)
	after := s.i + end + 1
	if err != nil || after+2 > len(p) || p[after] != '\r' || p[after+1] != '\n' {
		return s.atom()
	}
	after += 2
	if dropped {
		s.i = after
		return Token{Kind: Literal, Size: size, Dropped: true}
	}
	if int64(len(p)-after) < size {
		s.i = len(p)
		return Token{Kind: Bad}
	}
	s.i = after + int(size)
	return Token{Kind: Literal, Size: size, Text: p[after:s.i]}
}

// SkipValue skips one value whose first token was t: a list is skipped up
// to its matching close paren. It reports false on malformed input.
func (s *Scanner) SkipValue(t Token) bool {
	switch t.Kind {
	case Open:
		for depth := 1; depth > 0; {
			switch s.Next().Kind {
			case Open:
				depth++
			case Close:
				depth--
			case EOL, Bad:
				return false
			}
		}
		return true
	case Atom, String, Literal:
		return true
	}
	return false
}

// Number parses an unsigned decimal number (at most 2^63-1).
func Number(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n >= 0
}

// EqualFold compares ASCII text with an upper-case constant.
func EqualFold(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// HasPrefixFold reports whether b starts with upper, ignoring ASCII case.
func HasPrefixFold(b []byte, upper string) bool {
	return len(b) >= len(upper) && EqualFold(b[:len(upper)], upper)
}

// AppendQuoted appends s as a quoted string, escaping '"' and '\\'. The
// caller checks Quotable first; other strings go as literals.
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

// Quotable reports whether s can be sent as a quoted string.
func Quotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}
