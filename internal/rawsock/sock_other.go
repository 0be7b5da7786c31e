//go:build !linux

package rawsock

import (
	"errors"
	"net"
)

// Addr is a server's address for the raw calls, which need Linux.
type Addr struct{}

var errNotLinux = errors.New("raw sockets need Linux")

// NewAddr fails: raw sockets are Linux's here.
func NewAddr(*net.TCPAddr) (*Addr, error) { return nil, errNotLinux }

// Resolve fails: raw sockets are Linux's here.
func Resolve(string) (*Addr, error) { return nil, errNotLinux }

// Quiet returns the connection as is (quietConn is Linux's).
func Quiet(nc net.Conn) net.Conn { return nc }
