//go:build !linux

package smtpclient

import (
	"context"
	"errors"
	"time"

	"github.com/throng-io/throng/internal/rawsock"
)

// LoopSupported: the submission loop is Linux's.
const LoopSupported = false

// Loop is Linux's: see loop_linux.go.
type Loop struct{}

// ErrLoopClosed is Linux's too.
var ErrLoopClosed = errors.New("SMTP: the submission loop is closed (the run is over)")

// NewLoop fails: the loop needs Linux.
func NewLoop() (*Loop, error) {
	return nil, errors.New("the SMTP submission loop needs Linux")
}

// Submit does nothing.
func (l *Loop) Submit(context.Context, *Txn, *rawsock.Addr, time.Duration) (int64, int64) {
	return 0, 0
}

// Close does nothing.
func (l *Loop) Close() {}
