//go:build !linux

package pubsub

import (
	"errors"
	"net"
	"runtime"
)

// loopsSupported is false off Linux: every connection has its own reader
// goroutine.
const loopsSupported = false

type loop struct{}

func newLoop(r *run) (*loop, error)                 { return nil, errors.New("epoll loops need Linux") }
func (l *loop) add(ep *endpoint, nc net.Conn) error { return errors.New("epoll loops need Linux") }
func (l *loop) stop()                               {}

func cores() int { return runtime.GOMAXPROCS(0) }
