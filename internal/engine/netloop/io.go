package netloop

import (
	"errors"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// ioLayer is the I/O half of a loop thread: its sockets and its way of
// waiting for the kernel. The scheduler (loop) calls it, and it reports
// what happened by calling the loop's connected, received and broken
// methods from reap, never from the other methods, so the scheduler's
// state only changes where the scheduler expects it.
//
// A conn's fd and gen belong to the scheduler; a layer sets fd in dial and
// clears nothing: the scheduler calls shut and then bumps gen, so events
// tagged with an older gen are stale and a layer drops them.
type ioLayer interface {
	// dial opens a non-blocking TCP socket for c (setting c.fd) and starts
	// connecting. connected means the connection is already up; otherwise
	// the layer reports the outcome with loop.connected. A non-zero errno
	// means the connect failed at once (c.fd may still be set: the
	// scheduler shuts it).
	dial(c *conn) (connected bool, err syscall.Errno)
	// send starts sending req, whole, on c's connected socket. req lives
	// for the whole run. A failure may come at once (the errno) or later,
	// through loop.broken.
	send(c *conn, req []byte) syscall.Errno
	// write starts sending b, whole, on c's connected socket (HTTP/2's
	// frames). done: b is all sent and free again; otherwise the layer
	// owns b until it reports loop.written(c), or the socket's end through
	// loop.broken. One write at a time per socket.
	write(c *conn, b []byte) (done bool, err syscall.Errno)
	// sendBusy reports whether part of c's request is still unsent (the
	// response came first: the connection is then not reused).
	sendBusy(c *conn) bool
	// shut closes c's socket; any of its events still queued are stale.
	shut(c *conn)
	// wait hands the kernel the queued work and waits at most timeout (not
	// at all when timeout <= 0) for events; io_uring waits for up to batch
	// completions within a short bound, epoll ignores batch.
	wait(timeout time.Duration, batch int)
	// reap delivers the events wait collected to the loop.
	reap()
	// release lets the kernel finish with the thread's sockets and frees
	// the layer's resources. The scheduler shut every socket before.
	release()
}

// Errors recorded as the sample message of their class. They are values
// made once: the hot path never builds an error.
var (
	errTimeout   = errors.New("no complete response within the timeout")
	errClosedMid = errors.New("connection closed by the server before the response was complete")
	errProtocol  = errors.New("malformed response")
)

// classErrs are the sample errors of classes when nothing more is known.
var classErrs = func() (e [driver.NumClasses]error) {
	for c := range e {
		e[c] = errors.New(driver.Class(c).String())
	}
	return e
}()
