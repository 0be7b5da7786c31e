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

// Resolve resolves a TCP host:port and lays it out.
func Resolve(hostport string) (*Addr, error) {
	ta, err := net.ResolveTCPAddr("tcp", hostport)
	if err != nil {
		return nil, err
	}
	return NewAddr(ta)
}

// Read reads once from the non-blocking socket fd into b: n > 0 bytes
// read; 0 and errno 0 at the end of the stream; EAGAIN when nothing is
// there yet. EINTR is retried.
func Read(fd int, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// Write writes b to the non-blocking socket fd, as much as the socket
// takes: fewer than len(b) bytes and errno 0 mean the socket is full, and
// the rest waits for EPOLLOUT. EINTR is retried. A broken connection is
// EPIPE, never a SIGPIPE (MSG_NOSIGNAL).
func Write(fd int, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			return int(n), 0
		case unix.EINTR:
		case unix.EAGAIN:
			return 0, 0
		default:
			return 0, e
		}
	}
}

// maxIOV is the most buffers one Flush call hands the kernel.
const maxIOV = 64

// Flush writes the buffers of *b to the non-blocking socket fd, in order,
// as much as the socket takes, several per system call, and consumes what
// it wrote (as net.Buffers does): buffers left and errno 0 mean the socket
// is full, and the rest waits for EPOLLOUT. EINTR is retried; a broken
// connection is EPIPE, never a SIGPIPE. It does not allocate.
func Flush(fd int, b *net.Buffers) (int64, syscall.Errno) {
	var (
		iov   [maxIOV]unix.Iovec
		msg   unix.Msghdr
		total int64
	)
	for {
		k, offered := 0, 0
		for _, p := range *b {
			if k == len(iov) {
				break
			}
			if len(p) > 0 {
				iov[k].Base = &p[0]
				iov[k].SetLen(len(p))
				k++
				offered += len(p)
			}
		}
		if k == 0 {
			*b = (*b)[len(*b):]
			return total, 0
		}
		msg.Iov = &iov[0]
		msg.SetIovlen(k)
		n, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_NOSIGNAL)
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return total, 0
		default:
			return total, e
		}
		total += int64(n)
		consume(b, int64(n))
		if int(n) < offered {
			return total, 0 // the socket is full
		}
	}
}

// consume drops the first n bytes of *b, and the empty buffers after them.
func consume(b *net.Buffers, n int64) {
	for len(*b) > 0 && n > 0 {
		if l := int64(len((*b)[0])); n >= l {
			n -= l
			*b = (*b)[1:]
		} else {
			(*b)[0] = (*b)[0][n:]
			n = 0
		}
	}
	for len(*b) > 0 && len((*b)[0]) == 0 {
		*b = (*b)[1:]
	}
}
