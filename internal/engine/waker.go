package engine

import (
	"errors"
	"sync"
	"time"
)

// errWakerClosed is what wait returns once the waker is closed.
var errWakerClosed = errors.New("waker closed")

// waker is one timeline worker's alarm clock: arm sets it to go off after
// d (at once when d <= 0; arming again replaces the time), disarm stops
// it, and wait blocks until it goes off or is closed. arm and disarm may
// be called from any goroutine while its owner waits; a spurious return
// from wait is allowed (the timeline checks the time itself).
type waker interface {
	arm(d time.Duration)
	disarm()
	wait() error
	close()
}

// timerWaker is the portable waker: a runtime timer. Waking a goroutine
// parked on a timer's channel readies it from another thread, which on an
// otherwise idle process also wakes a second thread to look for work; the
// Linux waker (waker_linux.go) avoids that.
type timerWaker struct {
	t        *time.Timer
	done     chan struct{}
	doneOnce sync.Once
}

func newTimerWaker() *timerWaker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerWaker{t: t, done: make(chan struct{})}
}

func (w *timerWaker) arm(d time.Duration) { w.t.Reset(max(d, 0)) }
func (w *timerWaker) disarm()             { w.t.Stop() }

func (w *timerWaker) wait() error {
	select {
	case <-w.t.C:
		return nil
	case <-w.done:
		return errWakerClosed
	}
}

func (w *timerWaker) close() {
	w.doneOnce.Do(func() { close(w.done) })
	w.t.Stop()
}
