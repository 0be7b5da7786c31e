// Package rawsock opens and connects non-blocking TCP sockets with raw
// system calls, for the event loops that keep sockets out of Go's poller
// (the engine's netloop, the mail driver's SMTP submission loop). Raw
// calls never tell the scheduler they enter a system call: for a mostly
// idle process that saves waking the runtime's sysmon thread at every
// connection (docs/mail.md, "SMTP submission").
package rawsock

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Addr is a server's address in the kernel's own layout (struct
// sockaddr_in or sockaddr_in6), made once: connect takes it as is, and
// io_uring reads it from this heap memory, which never moves.
type Addr struct {
	Raw    [unix.SizeofSockaddrInet6]byte
	Len    uint32
	Family int
}

// NewAddr lays out a TCP address.
func NewAddr(a *net.TCPAddr) (*Addr, error) {
	sa := &Addr{}
	if a.Port <= 0 || a.Port > 65535 {
		return nil, errors.New("no port")
	}
	binary.BigEndian.PutUint16(sa.Raw[2:], uint16(a.Port))
	if ip4 := a.IP.To4(); ip4 != nil {
		sa.Family = unix.AF_INET
		binary.NativeEndian.PutUint16(sa.Raw[0:], unix.AF_INET)
		copy(sa.Raw[4:8], ip4)
		sa.Len = unix.SizeofSockaddrInet4
		return sa, nil
	}
	ip6 := a.IP.To16()
	if ip6 == nil {
		return nil, errors.New("not an IP address")
	}
	sa.Family = unix.AF_INET6
	binary.NativeEndian.PutUint16(sa.Raw[0:], unix.AF_INET6)
	copy(sa.Raw[8:24], ip6)
	if a.Zone != "" {
		ifi, err := net.InterfaceByName(a.Zone)
		if err != nil {
			return nil, err
		}
		binary.NativeEndian.PutUint32(sa.Raw[24:], uint32(ifi.Index))
	}
	sa.Len = unix.SizeofSockaddrInet6
	return sa, nil
}

// Socket opens a non-blocking, close-on-exec TCP socket with TCP_NODELAY
// (as wrk), with raw system calls.
func Socket(family int) (int, syscall.Errno) {
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	one := int32(1)
	if _, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0); e != 0 {
		Close(int(fd))
		return -1, e
	}
	return int(fd), 0
}

// Connect starts connecting fd to sa: 0 when connected at once,
// EINPROGRESS when the connection completes later (the socket becomes
// writable; see Err), another errno when it failed.
func Connect(fd int, sa *Addr) syscall.Errno {
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa.Raw)), uintptr(sa.Len))
	return e
}

// Err is the socket's pending error (SO_ERROR): after a connect in
// progress, 0 when it succeeded.
func Err(fd int) syscall.Errno {
	var v int32
	l := uint32(4)
	if _, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return e
	}
	return syscall.Errno(v)
}

// Close closes fd with a raw system call (a socket's close does not block
// without SO_LINGER).
func Close(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
