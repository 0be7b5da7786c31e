package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/throng-io/throng/internal/engine"
)

// stopOnSignal cancels the run on SIGINT or SIGTERM (the run then stops
// cleanly and writes its result); a second signal exits at once, leaving
// the journal. It returns a function telling which signal came (nil when
// none did) and one that stops listening.
func stopOnSignal(cancel context.CancelCauseFunc, stderr io.Writer) (caught func() os.Signal, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Pointer[os.Signal]
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		got.Store(&sig)
		fmt.Fprintf(stderr, "\nthrong: %s: stopping; the result will be written (again to quit at once)\n", signalName(sig))
		cancel(fmt.Errorf("%w by %s", engine.ErrStopped, signalName(sig)))
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "throng: quitting now; the journal holds every finished interval")
		os.Exit(signalExit(sig))
	}()
	caught = func() os.Signal {
		if p := got.Load(); p != nil {
			return *p
		}
		return nil
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
	return caught, stop
}

// signalExit is the exit code of a run stopped by sig: 128 + its number,
// as a shell reports a process killed by it (130 SIGINT, 143 SIGTERM).
func signalExit(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// interruptedOr is err, or when a signal came, the exit of that signal: a
// run stopped before its load started (compiling, checking the target,
// waiting for --start-at) wrote nothing.
func interruptedOr(sig os.Signal, err error) error {
	if sig == nil {
		return err
	}
	return &exitError{signalExit(sig), fmt.Errorf("stopped by %s before the load started; nothing was written", signalName(sig))}
}
