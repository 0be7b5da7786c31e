package imapclient

import (
	"errors"
	"fmt"

	"github.com/throng-io/throng/internal/driver"
)

// imapError is a NO or BAD answer, with the server's text (bounded).
type imapError struct {
	cmd    string // LOGIN, SELECT, ...
	status string // NO or BAD
	code   string // response code: AUTHENTICATIONFAILED, NONEXISTENT, ...
	text   string
}

func (e *imapError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("IMAP %s: %s [%s] %s", e.cmd, e.status, e.code, e.text)
	}
	return fmt.Sprintf("IMAP %s: %s %s", e.cmd, e.status, e.text)
}

// class maps an IMAP refusal to an error class: a refused log-on is auth;
// BAD (the server says the command is malformed) is protocol; a NO about
// the server's state or limits (UNAVAILABLE, SERVERBUG, LIMIT, INUSE) is
// 5xx-like; any other NO (no such mailbox, over quota, ...) 4xx-like.
func (e *imapError) class() driver.Class {
	switch {
	case e.code == "AUTHENTICATIONFAILED" || e.code == "AUTHORIZATIONFAILED" || e.code == "EXPIRED" ||
		(e.status == "NO" && (e.cmd == "LOGIN" || e.cmd == "AUTHENTICATE")):
		return driver.Auth
	case e.status == "BAD":
		return driver.Protocol
	case e.code == "UNAVAILABLE" || e.code == "SERVERBUG" || e.code == "LIMIT" || e.code == "INUSE":
		return driver.Status5xx
	}
	return driver.Status4xx
}

// isIMAP reports whether err is an IMAP refusal with the given code.
func isIMAP(err error, code string) bool {
	var e *imapError
	return errors.As(err, &e) && e.code == code
}
