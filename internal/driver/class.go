package driver

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Class is the kind of an action's failure, counted per interval. Classes
// are a small fixed set so that counting one costs an array increment.
type Class uint8

// The error classes. OK is not an error. The order is part of the result
// format (results name them, never number them).
const (
	OK        Class = iota
	Dial            // could not connect: refused, unreachable, name not resolved
	TLS             // TLS handshake or certificate failure
	Auth            // the server refused the credentials
	Timeout         // no complete answer within the action's timeout
	Status4xx       // the server answered with a client-error status
	Status5xx       // the server answered with a server-error status
	Protocol        // the answer did not follow the protocol
	IO              // the connection broke (reset, closed mid-answer)
	Lost            // a message that was sent never arrived (pub/sub)
	Corrupt         // the content received is not what was written (checksum)
	Other           // anything else
	// Skipped is not a failure: the action could not be attempted (no
	// server configured for it, like calendar actions without CalDAV). It is
	// counted and reported apart, never silently dropped.
	Skipped
	// Misdelivered: a message reached a mailbox that was none of its
	// recipients' (mail: a wrong route, or lists that differ).
	Misdelivered
	// Duplicate: a message reached a recipient more than once.
	Duplicate
	// Check: the answer came, but it is not what the scenario expects: a
	// check failed (web: a status, a body, a JSON value, a header) or a
	// value to extract was missing. The message names the check or the
	// extractor.
	Check
	// RedirectLoop: redirects were followed up to their bound without
	// reaching an answer (a loop, or a chain longer than the bound).
	RedirectLoop
	NumClasses
)

var classNames = [NumClasses]string{"ok", "dial", "tls", "auth", "timeout", "status_4xx", "status_5xx", "protocol", "io", "lost", "corrupt", "other", "skipped",
	"misdelivered", "duplicate", "check", "redirect_loop"}

// String is the class's name as used in results: "dial", "status_5xx", ...
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "other"
}

// ClassByName returns the class with the given result name.
func ClassByName(name string) (Class, bool) {
	for i, n := range classNames {
		if n == name {
			return Class(i), true
		}
	}
	return Other, false
}

// Error is an action failure with its class. Drivers return it (or wrap it)
// so the engine counts the failure in the right class.
type Error struct {
	Class Class
	Err   error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Class.String()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Clip bounds a server's text kept in an error message: at most 200
// bytes of b, then "..." when it was longer. It may append to b's array
// past its length, never within it.
func Clip(b []byte) []byte {
	const max = 200
	if len(b) > max {
		return append(b[:max:max], "..."...)
	}
	return b
}

// Errorf wraps err with a class.
func Errorf(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// Classify returns the class of an error returned by a driver: the class it
// carries, or one guessed from common network errors.
func Classify(err error) Class {
	if err == nil {
		return OK
	}
	var de *Error
	if errors.As(err, &de) {
		return de.Class
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Timeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Dial
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return Dial
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return Dial
	}
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	if errors.As(err, &certErr) || errors.As(err, &recErr) || errors.As(err, &alert) {
		return TLS
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return IO
	}
	return Other
}
