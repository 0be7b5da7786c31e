//go:build !linux

package netloop

import (
	"errors"

	"github.com/throng-io/throng/internal/rawsock"
)

var errNotLinux = errors.New("event loops need Linux")

func supported(kind string) error { return errNotLinux }

func newIO(kind string, l *loop, sa *rawsock.Addr, conns int) (ioLayer, error) {
	return nil, errNotLinux
}

func gettid() int { return 0 }

func tuneThread() {}
