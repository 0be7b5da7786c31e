// Package smtpclient is throng's SMTP submission client: one state machine
// (Txn) that speaks SMTP (EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA,
// with PIPELINING when offered, and QUIT), fed by either of two feeders:
//
//   - Converse, the caller's own goroutine over a net.Conn (TLS from the
//     first byte, STARTTLS, or plain; every system);
//   - Loop, one goroutine that runs many senders' plain-TCP transactions
//     on an epoll set (rawsock), Linux only; it has one owner that closes
//     it.
//
// Both feed the same Txn the same bytes and write what it says, so a
// conversation behaves the same whichever feeds it (txn_test.go runs each
// script through every feeder). The message is handed over as Stuffed
// makes it, dot-stuffed without copying. Errors are driver-classed.
package smtpclient
