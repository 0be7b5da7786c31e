// Package imapclient is the mail driver's lean IMAP4rev1 client: a
// connection between actions holds its socket and a few hundred bytes,
// no goroutine and no buffer (Acquire and Release take and give back its
// buffers around an action), so one generator can hold ten thousand of
// them. It speaks what the mail profile needs: LOGIN or AUTHENTICATE
// PLAIN, SELECT/EXAMINE (CONDSTORE), LIST, CREATE, FETCH, SEARCH, STORE,
// MOVE (or COPY and EXPUNGE), APPEND (MULTIAPPEND, LITERAL+), IDLE, raw
// commands, and LOGOUT. Its reads and writes are rawsock's quiet ones.
//
// A Conn is used by one goroutine at a time (IDLE's DONE excepted, see
// SendDone). Every error is driver-classed: a NO or BAD is an error of
// class auth, protocol, 4xx or 5xx with the server's words; an I/O error marks the
// connection Broken, and its user then logs on again on a new one.
package imapclient
