// Package imapwire reads and tokenizes the IMAP4rev1 wire format (RFC 3501
// section 9 and RFC 7888 literals), for throng's lean IMAP client (the mail
// driver) and its embedded IMAP server (internal/targets/mail). It knows
// the syntax only — lines, literals, atoms, strings, lists — never the
// meaning of a command or a response.
//
// A logical line is a text line plus the literals it announces ("{n}" or
// "{n+}" at the end of a physical line, then n bytes, then the rest of the
// line). ReadLine gathers one logical line into a caller-owned buffer, so a
// connection reads without allocating once its buffer has grown. Literals
// the caller does not want (a 75 KB body it only counts) are read and
// dropped, and only their size is kept.
package imapwire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxLine bounds one physical line (not counting literals). A longer line
// is an error: the peer is not speaking IMAP, or is hostile.
const MaxLine = 64 << 10

// ErrLineTooLong is returned for a physical line longer than MaxLine.
var ErrLineTooLong = errors.New("imap: line too long")

// KeepFunc decides whether a literal of n bytes is kept in the line buffer
// (true) or read and dropped (false).
type KeepFunc func(n int64) bool

// KeepAll keeps every literal (the server reading APPEND).
func KeepAll(int64) bool { return true }

// KeepUpTo returns a KeepFunc keeping literals of at most max bytes.
func KeepUpTo(max int64) KeepFunc { return func(n int64) bool { return n <= max } }

// Continuation is called, when not nil, after a synchronizing literal
// "{n}" was announced and before its bytes are read (a server sends "+ "
// then). It is not called for non-synchronizing literals "{n+}".
type Continuation func() error

// ReadLine reads one logical line from r into buf[:0] and returns it
// without its final CRLF. A kept literal appears as "{n}\r\n" followed by
// its n bytes; a dropped one as "{!n}\r\n" with no bytes. dropped is the
// number of literal bytes read and not kept; total is every byte read
// from r. maxLiteral bounds a single literal (0: no bound); a larger one is
// an error before any of it is read.
func ReadLine(r *bufio.Reader, buf []byte, keep KeepFunc, cont Continuation, maxLiteral int64) (line []byte, total, dropped int64, err error) {
	line = buf[:0]
	for {
		start := len(line)
		var n int
		line, n, err = readPhysical(r, line)
		total += int64(n)
		if err != nil {
			return line, total, dropped, err
		}
		size, sync, ok := literalSuffix(line[start:])
		if !ok {
			return line, total, dropped, nil
		}
		if maxLiteral > 0 && size > maxLiteral {
			return line, total, dropped, fmt.Errorf("imap: literal of %d bytes is above the limit of %d", size, maxLiteral)
		}
		if sync && cont != nil {
			if err := cont(); err != nil {
				return line, total, dropped, err
			}
		}
		if keep == nil || keep(size) {
			// Normalise "{n+}" to "{n}" so the tokenizer sees one form.
			i := len(line) - 1
			for line[i] != '{' {
				i--
			}
			line = append(line[:i], '{')
			line = strconv.AppendInt(line, size, 10)
			line = append(line, '}', '\r', '\n')
			off := len(line)
			line = grow(line, int(size))
			if _, err := io.ReadFull(r, line[off:]); err != nil {
				return line, total, dropped, noEOF(err)
			}
			total += size
			continue
		}
		i := len(line) - 1
		for line[i] != '{' {
			i--
		}
		line = append(line[:i], '{', '!')
		line = strconv.AppendInt(line, size, 10)
		line = append(line, '}', '\r', '\n')
		if _, err := r.Discard(int(size)); err != nil {
			return line, total, dropped, noEOF(err)
		}
		total += size
		dropped += size
	}
}

// readPhysical appends one physical line without its CRLF (or LF).
func readPhysical(r *bufio.Reader, line []byte) ([]byte, int, error) {
	n := 0
	start := len(line)
	for {
		frag, err := r.ReadSlice('\n')
		n += len(frag)
		line = append(line, frag...)
		if len(line)-start > MaxLine {
			return line, n, ErrLineTooLong
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && n > 0 {
			err = io.ErrUnexpectedEOF
		}
		return line, n, err
	}
	line = line[:len(line)-1]
	if len(line) > start && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, n, nil
}

// literalSuffix reports whether a physical line ends with "{n}" or "{n+}".
func literalSuffix(p []byte) (size int64, sync, ok bool) {
	if len(p) < 3 || p[len(p)-1] != '}' {
		return 0, false, false
	}
	j := len(p) - 2
	sync = true
	if p[j] == '+' {
		sync = false
		j--
	}
	end := j + 1
	for j >= 0 && p[j] >= '0' && p[j] <= '9' {
		j--
	}
	if j < 0 || p[j] != '{' || end-j-1 == 0 || end-j-1 > 12 {
		return 0, false, false
	}
	size, err := strconv.ParseInt(string(p[j+1:end]), 10, 64)
	if err != nil {
		return 0, false, false
	}
	return size, sync, true
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
