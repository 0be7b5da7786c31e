//go:build unix

package web

import (
	"crypto/tls"
	"net"
	"syscall"
)

// h1alive reports whether an idle keep-alive connection is still open: a
// peek that does not block sees no close (FIN) and no stray bytes from the
// server. It costs one system call.
func h1alive(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return alive && err == nil
}
