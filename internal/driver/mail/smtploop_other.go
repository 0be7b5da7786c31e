//go:build !linux

package mail

import (
	"context"
	"errors"
	"time"

	"github.com/throng-io/throng/internal/rawsock"
)

// submitLoopSupported: the submission loop is Linux's.
const submitLoopSupported = false

type submitLoop struct{}

func newSubmitLoop() (*submitLoop, error) {
	return nil, errors.New("the SMTP submission loop needs Linux")
}

func (l *submitLoop) submit(context.Context, *smtpTxn, *rawsock.Addr, time.Duration) (int64, int64) {
	return 0, 0
}

func (l *submitLoop) Close() {}
