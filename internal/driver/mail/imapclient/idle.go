package imapclient

import (
	"context"
	"time"
)

// Command sends one raw command (text without the tag and CRLF) and reads
// until its tagged status: name is what its errors call it.
func (ic *Conn) Command(ctx context.Context, name, text string) error {
	return ic.run(ctx, name, append(ic.begin(), text...), nil)
}

// SendIdle starts IDLE (RFC 2177): it sends the command, within Timeout,
// and returns; ReadIdle reads what comes. A write error marks the
// connection broken.
func (ic *Conn) SendIdle() error {
	w := append(ic.begin(), "IDLE\r\n"...)
	ic.b.w = w[:0]
	ic.NC.SetDeadline(time.Now().Add(ic.Timeout))
	if err := ic.write(w); err != nil {
		ic.Broken = true
		return err
	}
	return nil
}

// SendDone ends IDLE: it writes DONE, within Timeout. It may be called
// from another goroutine than ReadIdle's (the writer is not the reader);
// a write error marks the connection broken.
func (ic *Conn) SendDone() {
	ic.NC.SetWriteDeadline(time.Now().Add(ic.Timeout))
	if err := ic.write([]byte("DONE\r\n")); err != nil {
		ic.Broken = true
	}
}

// ReadIdle reads IDLE's responses until its tagged completion, giving the
// untagged ones to h. When a read times out (the caller's refresh
// deadline on NC), refresh is asked: true (it sent DONE) reads on for
// the completion within Timeout; false ends it, broken. A NO or BAD is
// the command's refusal.
func (ic *Conn) ReadIdle(h Handler, refresh func() bool) error {
	for {
		line, err := ic.readLine()
		if err != nil {
			if isTimeout(err) && refresh() {
				ic.NC.SetReadDeadline(time.Now().Add(ic.Timeout))
				continue
			}
			ic.Broken = true
			return err
		}
		switch {
		case len(line) >= 2 && line[0] == '*' && line[1] == ' ':
			if err := ic.untagged(line, h); err != nil {
				return err
			}
		case len(line) > 0 && line[0] == '+':
		default:
			return ic.status("IDLE", skipTag(line))
		}
	}
}

func isTimeout(err error) bool {
	te, ok := err.(interface{ Timeout() bool })
	return ok && te.Timeout()
}
