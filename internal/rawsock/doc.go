// Package rawsock is the one place of throng's event loops: the loops that
// keep sockets out of Go's poller (the engine's netloop, the mail driver's
// SMTP submission loop, pub/sub's subscriber loops) and quietConn (Quiet), which
// keeps Go's poller but not its system calls. It owns what they share:
//
//   - sockets opened, connected, read and written with raw system calls
//     (sock_linux.go): a raw call never tells the scheduler it enters the
//     kernel, which for a mostly idle process saves waking the runtime's
//     sysmon thread at each of them (bench/mail/README.md, "SMTP submission");
//   - flushing (Write, Flush): as much as the socket takes, EINTR retried,
//     what is left waits for EPOLLOUT;
//   - an epoll set with its wake-up and its wait policy (Poller, Policy):
//     how long a wait may hold its processor in a raw call, when the loop
//     yields, and that a signal ends a wait rather than being retried;
//   - slot and generation tokens (Token, Slots), so that an event of a
//     socket closed since is recognised as stale.
//
// A loop's protocol is not here: each is a state machine fed bytes by
// whichever loop or goroutine does the I/O.
package rawsock
