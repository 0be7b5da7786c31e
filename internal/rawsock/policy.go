package rawsock

import (
	"math"
	"runtime"
	"time"
)

// Policy is how a loop waits for the kernel. The rules behind it were
// learnt the hard way (bench/mail/README.md, "The submission loop"; netloop):
//
//   - A raw wait never tells the scheduler: for a loop that hands work to
//     goroutines and gets it back within a millisecond (the SMTP loop), it
//     saves a scheduler round trip and a sysmon wake-up per wait. But it
//     holds the loop's processor, so it lasts at most Raw; the rest of a
//     longer wait is an ordinary system call, which lets the runtime give
//     the processor to other goroutines.
//   - A signal ends a wait with no events, raw or not, and the loop goes
//     round: the runtime's preemption signals (a garbage collection's
//     stop-the-world) interrupt a raw wait, and retrying it at once never
//     reaches a preemption point, so a collection waited seconds.
//   - The loop yields before it waits (Yield): goroutines it woke in its
//     last round then run first, and may hand it more work before the
//     wait. A loop goroutine that never blocks in Go must yield now and
//     then anyway, or sysmon takes its processor away at every tick it
//     finds the thread in a blocking wait and wakes another thread to run
//     it (netloop measured 10 to 20 % more CPU per request without).
type Policy struct {
	// Raw is the longest part of one wait made in a raw system call; 0:
	// only a wait of no time is raw.
	Raw time.Duration
	// Yield: yield before every wait (0), at most once every Yield (> 0),
	// or never (NoYield).
	Yield time.Duration
}

// NoYield is Policy.Yield for a loop that never yields before its waits.
const NoYield time.Duration = -1

// Yielder makes a loop goroutine yield to the Go scheduler before its
// waits (see Policy.Yield). A loop that waits without a Poller (netloop's
// io_uring) uses one directly.
type Yielder struct {
	every time.Duration
	next  time.Duration // no yield before then
}

// NewYielder yields before every wait (every 0), at most once every
// every (> 0), or never (< 0).
func NewYielder(every time.Duration) Yielder {
	if every < 0 {
		return Yielder{every: every, next: math.MaxInt64}
	}
	return Yielder{every: every, next: every}
}

// Yield yields when it is due at now (a monotonic clock from 0; unused
// when every is 0) and reports whether it did. The test is inlined: a
// loop pays a call only when it yields.
func (y *Yielder) Yield(now time.Duration) bool {
	if now < y.next && y.every != 0 {
		return false
	}
	y.yield(now)
	return true
}

//go:noinline
func (y *Yielder) yield(now time.Duration) {
	y.next = now + y.every
	runtime.Gosched()
}
