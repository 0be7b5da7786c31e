package netloop

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockaddr is the server's address in the kernel's own layout (struct
// sockaddr_in or sockaddr_in6), made once per run: connect takes it as is,
// and io_uring reads it from this heap memory, which never moves.
type sockaddr struct {
	raw    [unix.SizeofSockaddrInet6]byte
	len    uint32
	family int
}

func newSockaddr(a *net.TCPAddr) (*sockaddr, error) {
	sa := &sockaddr{}
	if a.Port <= 0 || a.Port > 65535 {
		return nil, errors.New("no port")
	}
	binary.BigEndian.PutUint16(sa.raw[2:], uint16(a.Port))
	if ip4 := a.IP.To4(); ip4 != nil {
		sa.family = unix.AF_INET
		binary.NativeEndian.PutUint16(sa.raw[0:], unix.AF_INET)
		copy(sa.raw[4:8], ip4)
		sa.len = unix.SizeofSockaddrInet4
		return sa, nil
	}
	ip6 := a.IP.To16()
	if ip6 == nil {
		return nil, errors.New("not an IP address")
	}
	sa.family = unix.AF_INET6
	binary.NativeEndian.PutUint16(sa.raw[0:], unix.AF_INET6)
	copy(sa.raw[8:24], ip6)
	if a.Zone != "" {
		ifi, err := net.InterfaceByName(a.Zone)
		if err != nil {
			return nil, err
		}
		binary.NativeEndian.PutUint32(sa.raw[24:], uint32(ifi.Index))
	}
	sa.len = unix.SizeofSockaddrInet6
	return sa, nil
}

// newSocket opens a non-blocking TCP socket with TCP_NODELAY (as wrk).
func newSocket(family int) (int, syscall.Errno) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, errnoOf(err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return -1, errnoOf(err)
	}
	return fd, 0
}

// errnoOf returns the errno inside err (EIO when there is none).
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

func gettid() int { return unix.Gettid() }

// tuneThread sets the locked loop thread's timer slack to 1µs (the default
// is 50µs), so that its waits end when the next user, arrival or deadline
// is due rather than up to 50µs later.
func tuneThread() { unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) }
