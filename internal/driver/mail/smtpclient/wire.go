package smtpclient

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/emersion/go-smtp"

	"github.com/throng-io/throng/internal/driver"
)

// The pieces of SMTP on the wire that the submission state machine
// (smtptxn.go) reads and writes: replies, capabilities, AUTH PLAIN's
// response and the message as DATA sends it.

var (
	dotStuff    = []byte(".")
	crlf        = []byte("\r\n")
	dataEnd     = []byte(".\r\n")
	dataEndQuit = []byte(".\r\nQUIT\r\n")
)

// replyLine parses one line of a reply (with its line end), appends its
// text to *text (lines joined by "\n"), and says whether it is the last.
func replyLine(line []byte, text *[]byte) (code int, last bool, err error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) < 3 {
		return 0, false, fmt.Errorf("malformed reply %q", driver.Clip(line))
	}
	code, err = strconv.Atoi(string(line[:3]))
	if err != nil || code < 100 || code > 599 || (len(line) > 3 && line[3] != ' ' && line[3] != '-') {
		return 0, false, fmt.Errorf("malformed reply %q", driver.Clip(line))
	}
	if len(*text) > 0 {
		*text = append(*text, '\n')
	}
	if len(line) > 4 {
		*text = append(*text, line[4:]...)
	}
	return code, len(line) == 3 || line[3] == ' ', nil
}

// replyError makes a refusal (a 4xx or 5xx reply) an *smtp.SMTPError, with
// the enhanced code split off as go-smtp does.
func replyError(code int, text []byte) error {
	e := &smtp.SMTPError{Code: code, EnhancedCode: smtp.NoEnhancedCode, Message: string(text)}
	// "5.1.1 message": the enhanced code, as go-smtp splits it.
	if len(text) >= 6 && text[1] == '.' && (text[0] == '2' || text[0] == '4' || text[0] == '5') {
		if sp := bytes.IndexByte(text, ' '); sp > 0 {
			var ec smtp.EnhancedCode
			if _, err := fmt.Sscanf(string(text[:sp]), "%d.%d.%d", &ec[0], &ec[1], &ec[2]); err == nil {
				e.EnhancedCode, e.Message = ec, string(text[sp+1:])
			}
		}
	}
	return e
}

// wanted checks a reply's code: want itself, or any 2xx when want is 2.
func wanted(code, want int, text string) error {
	if code != want && !(want < 10 && code/100 == want) {
		return fmt.Errorf("unexpected reply %d %s", code, driver.Clip([]byte(text)))
	}
	return nil
}

// offers reads an EHLO reply's text: does the server offer PIPELINING
// (RFC 2920), STARTTLS (RFC 3207)?
func offers(text string) (pipelining, startTLS bool) {
	for _, l := range strings.Split(text, "\n") {
		switch strings.ToUpper(strings.TrimSpace(l)) {
		case "PIPELINING":
			pipelining = true
		case "STARTTLS":
			startTLS = true
		}
	}
	return pipelining, startTLS
}

// PlainResponse is SASL PLAIN's initial response for user and pass (RFC
// 4954).
func PlainResponse(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
}

// Stuffed is msg (CRLF lines) as DATA sends it, without its end: slices of
// msg, with a dot before every line that starts with one (RFC 5321
// 4.5.2), and a last line end when msg lacks one. The message goes out in
// one write, dot-stuffed only where a line starts with a dot (go-smtp's
// client dot-stuffed byte by byte through textproto: a sixth of the
// generator's CPU when it sent 25 KB messages).
func Stuffed(msg []byte) net.Buffers {
	body := net.Buffers{}
	for len(msg) > 0 {
		i := 0
		if msg[0] != '.' {
			if j := lineDot(msg); j >= 0 {
				i = j + 1
			} else {
				i = len(msg)
			}
		}
		if i == 0 {
			body = append(body, dotStuff)
			j := bytes.IndexByte(msg, '\n') + 1
			if j == 0 {
				j = len(msg)
			}
			i = j
		}
		body = append(body, msg[:i])
		msg = msg[i:]
	}
	if n := len(body); n == 0 || !bytes.HasSuffix(body[n-1], crlf) {
		body = append(body, crlf)
	}
	return body
}

// lineDot is the index of the first "\n." in b, or -1. It looks for the
// dots and checks the byte before each: mail has fewer dots than line ends
// (a generated 25 KB message: 123 against 371), 3x faster than bytes.Index.
func lineDot(b []byte) int {
	for off := 0; ; {
		j := bytes.IndexByte(b[off:], '.')
		if j < 0 {
			return -1
		}
		j += off
		if j > 0 && b[j-1] == '\n' {
			return j - 1
		}
		off = j + 1
	}
}
