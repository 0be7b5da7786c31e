package smtpclient

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/throng-io/throng/internal/driver"
)

// errNoStartTLS: smtp_tls is starttls and the server does not offer it.
var errNoStartTLS = errors.New("the server does not offer STARTTLS (smtp_tls: starttls); set smtp_tls: none, or tls for a port that speaks TLS at once")

// Txn is one SMTP submission as a state machine, throng's only SMTP
// client: it is fed the server's bytes and says what to write next, and
// whoever does the I/O feeds it: a Loop (plain SMTP on one epoll loop) or
// the sender's own goroutine over a net.Conn (Converse: TLS, STARTTLS,
// other systems). It says the greeting's EHLO, STARTTLS and EHLO again
// when StartTLS (the feeder then upgrades the connection), AUTH PLAIN when
// Auth is set, MAIL, one RCPT per recipient and DATA (in one write when
// the server offers PIPELINING), the message, and QUIT (with the message
// when pipelining). Every failure is classed (driver.Class: auth, 4xx,
// 5xx, protocol, io, timeout, dial, tls) and names the stage it came in.
//
// Its caller fills in the exported fields and hands it to one feeder,
// once; when the feeder returns, Err is the outcome. A Txn is not safe for
// concurrent use: the feeder owns it until it returns.
type Txn struct {
	// Set before it runs.
	EHLO     string      // EHLO's argument
	Auth     string      // AUTH PLAIN's initial response (PlainResponse; "": no AUTH)
	StartTLS bool        // STARTTLS after the first EHLO (smtp_tls starttls)
	Probe    bool        // no message: QUIT once EHLO is answered (the preflight)
	From     string      // MAIL FROM's address
	Rcpts    []string    // one RCPT TO each; at least one unless Probe
	Body     net.Buffers // the message as Stuffed returns it, without its end
	Deadline time.Time   // when the whole transaction must be over
	// Expect is called, once the envelope is answered and before the
	// message goes out, with the refused recipients; Accepted when the
	// message is accepted; Cancel when it went out but was not accepted.
	// Any may be nil. They run on the feeder's goroutine.
	Expect   func(refused []string)
	Accepted func(at time.Time)
	Cancel   func()

	// State.
	pending    []txnStep // the replies awaited, in order
	rcptAt     int       // the recipient whose reply comes next
	pipelining bool
	mailErr    error
	rcptErrs   []error
	dataErr    error
	refusal    error // the first recipient refused, when some were accepted
	partial    []byte
	text       []byte
	quitBy     time.Time // the QUIT reply is awaited until then
	// upgrade: the server accepted STARTTLS; the feeder must upgrade the
	// connection to TLS, then call upgraded. secured: it did.
	upgrade, secured bool

	// Outcome: done, then err (nil: accepted by the server).
	done bool
	err  error
	// drains counts the feeder's waits for the socket to take the rest
	// of a write.
	drains int
}

// Err is the transaction's outcome once its feeder returned: nil when the
// server accepted the message (or, for a probe, answered EHLO), else the
// classed failure. A message accepted with some recipients refused is
// accepted: Err is then the first refusal, class of its reply.
func (t *Txn) Err() error { return t.err }

// txnStep is what a reply answers.
type txnStep uint8

const (
	stepGreet txnStep = iota
	stepEHLO
	stepStartTLS
	stepAuth
	stepMail
	stepRcpt
	stepData
	stepEmpty // the empty message ending a DATA every recipient of was refused
	stepBody
	stepQuit
)

// quitWait bounds the wait for QUIT's reply, which changes nothing.
const quitWait = time.Second

// start begins the transaction on a new connection: the greeting comes
// first.
func (t *Txn) start() {
	t.pending = append(t.pending[:0], stepGreet)
	t.rcptErrs = make([]error, len(t.Rcpts))
}

// stage names where the transaction is, for its errors.
func (t *Txn) stage() string {
	if len(t.pending) == 0 {
		return "MAIL"
	}
	switch t.pending[0] {
	case stepGreet, stepEHLO:
		return "EHLO"
	case stepStartTLS:
		return "STARTTLS"
	case stepAuth:
		return "AUTH"
	case stepBody, stepEmpty:
		return "DATA"
	}
	return "MAIL"
}

// waitUntil is when the loop gives up on the reply awaited.
func (t *Txn) waitUntil() time.Time {
	if len(t.pending) > 0 && t.pending[0] == stepQuit && t.quitBy.Before(t.Deadline) {
		return t.quitBy
	}
	return t.Deadline
}

// feed takes bytes from the server and returns what to write next (nil:
// nothing). It stops at the end of the transaction (t.done), and when the
// connection must be upgraded (t.upgrade).
func (t *Txn) feed(p []byte, now time.Time) (out net.Buffers) {
	if t.upgrade {
		return nil // plain text after STARTTLS's 220: dropped
	}
	t.partial = append(t.partial, p...)
	for !t.done && !t.upgrade {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			if len(t.partial) > 1024 {
				t.fail(smtpErr(t.stage(), errors.New("reply line longer than 1024 bytes")))
			}
			break
		}
		code, last, err := replyLine(t.partial[:i+1], &t.text)
		t.partial = t.partial[i+1:]
		if err != nil {
			t.broken(err)
			break
		}
		if !last {
			continue
		}
		text := string(t.text)
		t.text = t.text[:0]
		var refusal error
		if code >= 400 {
			refusal = replyError(code, []byte(text))
		}
		out = append(out, t.reply(code, text, refusal, now)...)
	}
	if t.done {
		return nil
	}
	return out
}

// broken ends the transaction on an I/O or protocol error: after the
// message was accepted it changes nothing (only QUIT's reply was awaited).
func (t *Txn) broken(err error) {
	if t.done {
		return
	}
	if t.quitting() {
		t.finish(t.refusal)
		return
	}
	t.fail(smtpErr(t.stage(), err))
}

// timedOut ends the transaction when its deadline (or QUIT's) passed.
func (t *Txn) timedOut(timeout time.Duration) {
	if t.quitting() {
		t.finish(t.refusal)
		return
	}
	t.fail(smtpErr(t.stage(), timeoutErr(timeout)))
}

// stop ends the transaction when its sender gave up (its context ended,
// the run stops): class io, unless only QUIT's reply was awaited.
func (t *Txn) stop() {
	if t.quitting() {
		t.finish(t.refusal)
		return
	}
	t.fail(driver.Errorf(driver.IO, fmt.Errorf("SMTP %s: stopped", t.stage())))
}

// quitting: only QUIT's reply is awaited (the message, if any, was
// accepted).
func (t *Txn) quitting() bool { return len(t.pending) > 0 && t.pending[0] == stepQuit }

// upgraded is the feeder's word that the connection now speaks TLS: EHLO
// is said again, and what the server offered before is forgotten (RFC
// 3207 4.2).
func (t *Txn) upgraded() net.Buffers {
	t.upgrade, t.secured, t.pipelining = false, true, false
	return t.cmd(stepEHLO, "EHLO ", t.EHLO)
}

// timeoutErr is the error of a transaction that was not over in time; its
// class is timeout.
type timeoutErr time.Duration

func (e timeoutErr) Error() string   { return fmt.Sprintf("not over within %v", time.Duration(e)) }
func (e timeoutErr) Timeout() bool   { return true }
func (e timeoutErr) Temporary() bool { return true }

// fail ends the transaction with err; a message that went out unanswered
// is cancelled.
func (t *Txn) fail(err error) {
	if len(t.pending) > 0 && t.pending[0] == stepBody && t.Cancel != nil {
		t.Cancel()
	}
	t.finish(err)
}

func (t *Txn) finish(err error) {
	t.done, t.err, t.pending = true, err, t.pending[:0]
}

// cmd returns one command line to write, whose reply is step.
func (t *Txn) cmd(step txnStep, parts ...string) net.Buffers {
	var line []byte
	for _, p := range parts {
		line = append(line, p...)
	}
	t.pending = append(t.pending, step)
	return net.Buffers{append(line, crlf...)}
}

// reply handles one complete reply; refusal is its *smtp.SMTPError when it
// is a 4xx or 5xx.
func (t *Txn) reply(code int, text string, refusal error, now time.Time) net.Buffers {
	if len(t.pending) == 0 {
		t.fail(smtpErr(t.stage(), fmt.Errorf("reply %d %s to no command", code, driver.Clip([]byte(text)))))
		return nil
	}
	r := answer{step: t.pending[0], code: code, text: text, refusal: refusal}
	t.pending = t.pending[1:]
	switch r.step {
	case stepGreet:
		if !t.expect(r, 220, "EHLO") {
			return nil
		}
		return t.cmd(stepEHLO, "EHLO ", t.EHLO)
	case stepEHLO:
		if !t.expect(r, 2, "EHLO") {
			return nil
		}
		return t.ehloDone(text, now)
	case stepStartTLS:
		if !t.expect(r, 220, "STARTTLS") {
			return nil
		}
		// Whatever the server sent after its 220 is not read: a STARTTLS
		// injection would otherwise be taken for the answer to a command
		// sent over TLS.
		t.upgrade, t.partial = true, t.partial[:0]
		return nil
	case stepAuth:
		if !t.expect(r, 235, "AUTH") {
			return nil
		}
		return t.envelope()
	case stepMail, stepRcpt, stepData:
		return t.envelopeReply(r)
	case stepEmpty:
		t.finish(t.firstRefusal())
		return nil
	case stepBody:
		if !t.expect(r, 250, "DATA") {
			return nil
		}
		if t.Accepted != nil {
			t.Accepted(now)
		}
		t.quitBy = now.Add(quitWait)
		if len(t.pending) == 0 {
			return t.cmd(stepQuit, "QUIT")
		}
	case stepQuit:
		t.finish(t.refusal)
	}
	return nil
}

// answer is one complete reply and the step it answers.
type answer struct {
	step    txnStep
	code    int
	text    string
	refusal error // its *smtp.SMTPError when it is a 4xx or 5xx
}

// check is nil when r's code is want (any 2xx when want is 2).
func (r answer) check(want int) error {
	if r.refusal != nil {
		return r.refusal
	}
	return wanted(r.code, want, r.text)
}

// expect is for a reply that must be want: anything else ends the
// transaction at stage (false).
func (t *Txn) expect(r answer, want int, stage string) bool {
	if err := r.check(want); err != nil {
		t.pending = append(t.pending[:0], r.step)
		t.fail(smtpErr(stage, err))
		return false
	}
	return true
}

// ehloDone acts on the answered EHLO: STARTTLS when asked for (and
// offered), QUIT for a probe, AUTH when configured, else the envelope.
func (t *Txn) ehloDone(text string, now time.Time) net.Buffers {
	var startTLS bool
	t.pipelining, startTLS = offers(text)
	if t.StartTLS && !t.secured {
		if !startTLS {
			t.finish(driver.Errorf(driver.Protocol, fmt.Errorf("SMTP STARTTLS: %w", errNoStartTLS)))
			return nil
		}
		return t.cmd(stepStartTLS, "STARTTLS")
	}
	if t.Probe {
		t.quitBy = now.Add(quitWait)
		return t.cmd(stepQuit, "QUIT")
	}
	if t.Auth != "" {
		return t.cmd(stepAuth, "AUTH PLAIN ", t.Auth)
	}
	return t.envelope()
}

// envelopeReply handles the reply to MAIL, a RCPT or DATA: a refusal is
// kept, anything else unexpected ends the transaction. Without
// PIPELINING the next envelope command follows each reply; the answered
// envelope is then decided on.
func (t *Txn) envelopeReply(r answer) net.Buffers {
	keep, want := &t.mailErr, 250
	switch r.step {
	case stepRcpt:
		keep, want = &t.rcptErrs[t.rcptAt], 2
		t.rcptAt++
	case stepData:
		keep, want = &t.dataErr, 354
	}
	err := r.check(want)
	var se *smtp.SMTPError
	if err != nil && !errors.As(err, &se) {
		t.pending = append(t.pending[:0], r.step)
		t.fail(smtpErr("MAIL", err))
		return nil
	}
	*keep = err
	switch {
	case r.step == stepData:
		return t.decide()
	case t.pipelining:
		return nil
	case r.step == stepMail:
		if t.mailErr != nil {
			return t.decide()
		}
		return t.cmd(stepRcpt, "RCPT TO:<", t.Rcpts[0], ">")
	case t.rcptAt < len(t.Rcpts):
		return t.cmd(stepRcpt, "RCPT TO:<", t.Rcpts[t.rcptAt], ">")
	case t.refused() == len(t.Rcpts):
		t.dataErr = errors.New("no recipient accepted")
		return t.decide()
	}
	return t.cmd(stepData, "DATA")
}

// envelope sends MAIL FROM, and with PIPELINING every RCPT TO and DATA
// with it (one round trip instead of 2 + recipients).
func (t *Txn) envelope() net.Buffers {
	if !t.pipelining {
		return t.cmd(stepMail, "MAIL FROM:<", t.From, ">")
	}
	line := append(append(append([]byte(nil), "MAIL FROM:<"...), t.From...), ">\r\n"...)
	t.pending = append(t.pending, stepMail)
	for _, r := range t.Rcpts {
		line = append(append(append(line, "RCPT TO:<"...), r...), ">\r\n"...)
		t.pending = append(t.pending, stepRcpt)
	}
	t.pending = append(t.pending, stepData)
	return net.Buffers{append(line, "DATA\r\n"...)}
}

func (t *Txn) refused() int {
	n := 0
	for _, e := range t.rcptErrs {
		if e != nil {
			n++
		}
	}
	return n
}

// firstRefusal is the first refused recipient's error.
func (t *Txn) firstRefusal() error {
	for i, e := range t.rcptErrs {
		if e != nil {
			return smtpErr("RCPT "+t.Rcpts[i], e)
		}
	}
	return nil
}

// decide acts on the answered envelope: MAIL refused, every
// recipient refused (a DATA accepted anyway is ended empty) or DATA refused
// end the transaction; otherwise the message goes out, with QUIT after it
// when the server pipelines.
func (t *Txn) decide() net.Buffers {
	switch {
	case t.mailErr != nil:
		t.finish(smtpErr("MAIL", t.mailErr))
		return nil
	case t.refused() == len(t.Rcpts):
		if t.dataErr == nil {
			t.pending = append(t.pending, stepEmpty)
			return net.Buffers{crlf, dataEnd}
		}
		t.finish(t.firstRefusal())
		return nil
	case t.dataErr != nil:
		t.finish(smtpErr("DATA", t.dataErr))
		return nil
	}
	t.refusal = t.firstRefusal()
	if t.Expect != nil {
		var refused []string
		for i, e := range t.rcptErrs {
			if e != nil {
				refused = append(refused, t.Rcpts[i])
			}
		}
		t.Expect(refused)
	}
	// The body goes out once: its buffers are handed over as they are.
	out := t.Body
	t.Body = nil
	t.pending = append(t.pending, stepBody)
	if t.pipelining {
		t.pending = append(t.pending, stepQuit)
		return append(out, dataEndQuit)
	}
	return append(out, dataEnd)
}
