package netloop

import "golang.org/x/sys/unix"

func gettid() int { return unix.Gettid() }

// tuneThread sets the locked loop thread's timer slack to 1µs (the default
// is 50µs), so that its waits end when the next user, arrival or deadline
// is due rather than up to 50µs later.
func tuneThread() { unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) }
