//go:build !linux

package netloop

import (
	"errors"
	"net"
)

var errNotLinux = errors.New("event loops need Linux")

func supported(kind string) error { return errNotLinux }

type sockaddr struct{}

func newSockaddr(*net.TCPAddr) (*sockaddr, error) { return nil, errNotLinux }

func newIO(kind string, l *loop, sa *sockaddr, conns int) (ioLayer, error) { return nil, errNotLinux }

func gettid() int { return 0 }

func tuneThread() {}
