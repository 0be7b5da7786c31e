package rawsock

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// quietConn is a TCP connection whose reads and writes are raw system
// calls on its non-blocking socket (Read and Flush, so they never
// block), waiting for readiness in the runtime's netpoller as net.Conn
// does, deadlines included (syscall.RawConn). What it saves is the
// runtime's bookkeeping around a system call: net.Conn's Read and Write
// tell the scheduler they enter one, and when every P was idle that wakes
// the sysmon thread, which then polls every 20 µs while any goroutine
// runs. A generator of 10,000 mostly idle mail users wakes from idle at
// nearly every network exchange: measured on a 2-core VM, sysmon was 266
// of its 465 thread wake-ups a second, each costing about 35 µs of CPU
// there.
//
// Like net.Conn, it may be read and written at once, and concurrent writes
// (or reads) are serialized: each direction's state is under its own lock.
type quietConn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool // q.rawRead, bound once

	wmu     sync.Mutex
	wbuf    net.Buffers // what is left to write
	wn      int64
	werr    syscall.Errno
	writeFn func(fd uintptr) bool // q.rawWrite, bound once
	one     [1][]byte
}

// Quiet wraps a TCP connection in a quietConn, whose Read and Write are
// net.Conn's and which is a BuffersWriter; any other connection is
// returned as is.
func Quiet(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	q := &quietConn{TCPConn: tc, rc: rc}
	q.readFn, q.writeFn = q.rawRead, q.rawWrite
	return q
}

// rawRead reads once; false (wait for readiness) when nothing is there.
func (q *quietConn) rawRead(fd uintptr) bool {
	q.rn, q.rerr = Read(int(fd), q.rbuf)
	return q.rerr != syscall.EAGAIN
}

// Read reads as net.Conn does: io.EOF at the end of the stream, a
// *net.OpError otherwise (a deadline's is a timeout).
func (q *quietConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	q.rmu.Lock()
	defer q.rmu.Unlock()
	q.rbuf, q.rn, q.rerr = p, 0, 0
	err := q.rc.Read(q.readFn)
	q.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case q.rerr != 0:
		return 0, q.opError("read", q.rerr)
	case q.rn == 0:
		return 0, io.EOF
	}
	return q.rn, nil
}

// rawWrite writes what the socket takes; false (wait for room) while
// something is left.
func (q *quietConn) rawWrite(fd uintptr) bool {
	n, e := Flush(int(fd), &q.wbuf)
	q.wn += n
	q.werr = e
	return e != 0 || len(q.wbuf) == 0
}

// writeAll writes every buffer, in order; q.wmu is held.
func (q *quietConn) writeAll(bufs net.Buffers) (int64, error) {
	q.wbuf, q.wn, q.werr = bufs, 0, 0
	err := q.rc.Write(q.writeFn)
	q.wbuf = nil
	switch {
	case err != nil:
		return q.wn, err
	case q.werr != 0:
		return q.wn, q.opError("write", q.werr)
	}
	return q.wn, nil
}

// Write writes all of p, as net.Conn does.
func (q *quietConn) Write(p []byte) (int, error) {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	q.one[0] = p
	n, err := q.writeAll(q.one[:])
	q.one[0] = nil
	return int(n), err
}

// WriteBuffers writes b with as few system calls as the socket allows,
// consuming it as net.Buffers does.
func (q *quietConn) WriteBuffers(b *net.Buffers) (int64, error) {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	n, err := q.writeAll(*b)
	*b = (*b)[len(*b):]
	return n, err
}

func (q *quietConn) opError(op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: q.LocalAddr(), Addr: q.RemoteAddr(), Err: os.NewSyscallError(op, e)}
}
