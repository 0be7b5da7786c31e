package mail

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpClient is the submission side of SMTP, enough for one transaction
// per connection: replies are read whole (multi-line), refusals are
// *smtp.SMTPError, and the message goes out in one write, dot-stuffed
// only where a line starts with a dot. (go-smtp's client dot-stuffs
// byte by byte through textproto: a sixth of the generator's CPU when it
// sends 25 KB messages.)
type smtpClient struct {
	nc      net.Conn
	r       *bufio.Reader
	timeout time.Duration
	line    []byte // the command being written
}

func newSMTPClient(nc net.Conn, timeout time.Duration) *smtpClient {
	return &smtpClient{nc: nc, r: bufio.NewReaderSize(nc, 1024), timeout: timeout}
}

// reply reads one reply, every line of it. A 4xx or 5xx is an
// *smtp.SMTPError with the enhanced code split off as go-smtp does.
func (c *smtpClient) reply() (int, string, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	var text []byte
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				err = fmt.Errorf("reply line longer than %d bytes", c.r.Size())
			}
			return 0, "", err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) < 3 {
			return 0, "", fmt.Errorf("malformed reply %q", clip(line))
		}
		code, err := strconv.Atoi(string(line[:3]))
		if err != nil || code < 100 || code > 599 || (len(line) > 3 && line[3] != ' ' && line[3] != '-') {
			return 0, "", fmt.Errorf("malformed reply %q", clip(line))
		}
		if len(text) > 0 {
			text = append(text, '\n')
		}
		if len(line) > 4 {
			text = append(text, line[4:]...)
		}
		if len(line) == 3 || line[3] == ' ' {
			if code >= 400 {
				return code, "", replyError(code, text)
			}
			return code, string(text), nil
		}
	}
}

// replyError makes a refusal an *smtp.SMTPError.
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

// cmd sends one command line and reads its reply, which must be want
// (a 2xx when want is 2).
func (c *smtpClient) cmd(want int, parts ...string) (string, error) {
	c.line = c.line[:0]
	for _, p := range parts {
		c.line = append(c.line, p...)
	}
	c.line = append(c.line, "\r\n"...)
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.nc.Write(c.line); err != nil {
		return "", err
	}
	return c.expect(want)
}

func (c *smtpClient) expect(want int) (string, error) {
	code, text, err := c.reply()
	if err != nil {
		return "", err
	}
	if code != want && !(want < 10 && code/100 == want) {
		return "", fmt.Errorf("unexpected reply %d %s", code, clip([]byte(text)))
	}
	return text, nil
}

// greet reads the server's greeting and says EHLO.
func (c *smtpClient) greet(name string) error {
	if _, err := c.expect(220); err != nil {
		return err
	}
	_, err := c.cmd(2, "EHLO ", name)
	return err
}

// authPlain authenticates with SASL PLAIN (RFC 4954, initial response).
func (c *smtpClient) authPlain(user, pass string) error {
	ir := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
	_, err := c.cmd(235, "AUTH PLAIN ", ir)
	return err
}

// data sends DATA, the message (CRLF lines) and its end, and reads the
// server's acceptance.
func (c *smtpClient) data(msg []byte) error {
	if _, err := c.cmd(354, "DATA"); err != nil {
		return err
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	body := net.Buffers{}
	for len(msg) > 0 {
		// Stuff a dot at the start of a line with another (RFC 5321 4.5.2).
		i := 0
		if msg[0] != '.' {
			if j := bytes.Index(msg, []byte("\n.")); j >= 0 {
				i = j + 1
			} else {
				i = len(msg)
			}
		}
		if i == 0 {
			body = append(body, []byte("."))
			j := bytes.IndexByte(msg, '\n') + 1
			if j == 0 {
				j = len(msg)
			}
			i = j
		}
		body = append(body, msg[:i])
		msg = msg[i:]
	}
	if n := len(body); n == 0 || !bytes.HasSuffix(body[n-1], []byte("\r\n")) {
		body = append(body, []byte("\r\n"))
	}
	body = append(body, []byte(".\r\n"))
	if _, err := body.WriteTo(c.nc); err != nil {
		return err
	}
	_, err := c.expect(250)
	return err
}

// quit says QUIT and waits briefly for the answer.
func (c *smtpClient) quit() {
	c.timeout = min(c.timeout, time.Second)
	c.cmd(221, "QUIT")
}
