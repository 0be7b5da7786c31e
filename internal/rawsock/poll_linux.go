package rawsock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller is one loop's epoll set: its sockets' registrations, its wait
// (under a Policy) and, when asked for, its wake-up, which other
// goroutines use to hand the loop work wherever it sleeps. Add, Mod, Del
// and Wake are safe for concurrent use; Wait and Park belong to the loop's
// goroutine.
type Poller struct {
	epfd   int
	policy Policy
	yield  Yielder
	base   time.Time     // the clock of yields at most every Policy.Yield
	ts     unix.Timespec // epoll_pwait2's argument, kept off the stack

	// The wake-up (wake true): an eventfd in the set under wakeToken, and
	// a channel for a loop parked with nothing in flight.
	wakefd  int // -1: none
	parked  atomic.Bool
	waiting atomic.Bool
	wake    chan struct{}
	wmu     sync.Mutex // orders a wake-up's write before Close
	closed  bool
}

// wakeToken is the wake-up's token: no slot has it.
var wakeToken = Token{Slot: -1}

var (
	pwait2Once sync.Once
	pwait2OK   bool // epoll_pwait2 (Linux 5.11) is there: waits to the nanosecond
)

// NewPoller makes an epoll set that waits under policy; with wake, it has
// a wake-up (Wake, Park).
func NewPoller(policy Policy, wake bool) (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	p := &Poller{epfd: epfd, policy: policy, yield: NewYielder(policy.Yield), base: time.Now(), wakefd: -1}
	pwait2Once.Do(func() {
		var ev [1]unix.EpollEvent
		_, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&ev[0])), 1, uintptr(unsafe.Pointer(&p.ts)), 0, 0)
		pwait2OK = e == 0
	})
	if wake {
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("eventfd: %w", err)
		}
		if e := p.Add(efd, unix.EPOLLIN, wakeToken); e != 0 {
			unix.Close(epfd)
			unix.Close(efd)
			return nil, fmt.Errorf("epoll_ctl: %w", e)
		}
		p.wakefd, p.wake = efd, make(chan struct{}, 1)
	}
	return p, nil
}

// Add registers the socket fd for events under t.
func (p *Poller) Add(fd int, events uint32, t Token) syscall.Errno {
	return p.ctl(unix.EPOLL_CTL_ADD, fd, events, t)
}

// Mod changes the events fd is registered for (as when EPOLLOUT is armed
// for what a socket did not take, and disarmed when it took the rest).
func (p *Poller) Mod(fd int, events uint32, t Token) syscall.Errno {
	return p.ctl(unix.EPOLL_CTL_MOD, fd, events, t)
}

// Del removes fd from the set. (Closing a socket's only descriptor removes
// it too.)
func (p *Poller) Del(fd int) syscall.Errno {
	return p.ctl(unix.EPOLL_CTL_DEL, fd, 0, Token{})
}

// SetOut arms EPOLLOUT for fd (registered under t for in) when want, and
// disarms it when not: a loop waits for room only while something it
// wrote was not taken, so a socket with nothing to send never wakes it.
// *armed is fd's state as the loop keeps it; epoll_ctl is called only
// when it changes.
func (p *Poller) SetOut(fd int, in uint32, t Token, armed *bool, want bool) syscall.Errno {
	if want == *armed {
		return 0
	}
	*armed = want
	if want {
		in |= unix.EPOLLOUT
	}
	return p.Mod(fd, in, t)
}

func (p *Poller) ctl(op, fd int, events uint32, t Token) syscall.Errno {
	ev := unix.EpollEvent{Events: events, Fd: t.Slot, Pad: int32(t.Gen)}
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	return e
}

// TokenOf is the token an event carries.
func TokenOf(ev *unix.EpollEvent) Token { return Token{Slot: ev.Fd, Gen: uint32(ev.Pad)} }

// Wait waits at most d for events (not at all when d <= 0) and returns
// how many it put at the start of events: the wake-up's are taken out. It
// yields first when the policy says so, so that the goroutines the loop
// woke in its last round run before it waits. pending, when not nil, is
// asked after the loop told wakers it is about to wait: true (work was
// handed over meanwhile) skips the wait. A signal ends the wait with no
// events (see Policy).
func (p *Poller) Wait(events []unix.EpollEvent, d time.Duration, pending func() bool) int {
	if p.policy.Yield > 0 {
		p.yield.Yield(time.Since(p.base))
	} else {
		p.yield.Yield(0)
	}
	if p.wakefd >= 0 {
		p.waiting.Store(true)
	}
	n := 0
	if pending == nil || !pending() {
		n = p.wait(events, d)
	}
	if p.wakefd < 0 {
		return n
	}
	p.waiting.Store(false)
	k := 0
	for i := range n {
		if TokenOf(&events[i]) == wakeToken {
			var b [8]byte
			unix.RawSyscall(unix.SYS_READ, uintptr(p.wakefd), uintptr(unsafe.Pointer(&b[0])), 8)
			continue
		}
		events[k] = events[i]
		k++
	}
	return k
}

// wait is the policy's wait: up to Raw of it in a raw epoll_wait, the rest
// in an ordinary one; an error (EINTR) ends it with nothing.
func (p *Poller) wait(events []unix.EpollEvent, d time.Duration) int {
	d = max(d, 0)
	if d == 0 || p.policy.Raw > 0 {
		first := min(d, p.policy.Raw)
		n, e := p.pwait(true, events, first)
		if e != 0 {
			return 0
		}
		if n > 0 || d <= first {
			return n
		}
		d -= first
	}
	n, e := p.pwait(false, events, d)
	if e != 0 {
		return 0
	}
	return n
}

// pwait is one epoll wait of at most d: raw or ordinary, to the nanosecond
// where the kernel has epoll_pwait2, else rounded up to the millisecond.
// (The pointers are converted in the calls themselves, as unsafe.Pointer's
// rules for system calls want.)
func (p *Poller) pwait(raw bool, events []unix.EpollEvent, d time.Duration) (int, syscall.Errno) {
	var n uintptr
	var e syscall.Errno
	switch {
	case d <= 0 && raw:
		n, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	case d <= 0:
		n, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	case pwait2OK:
		p.ts = unix.NsecToTimespec(int64(d))
		if raw {
			n, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(&p.ts)), 0, 0)
		} else {
			n, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(&p.ts)), 0, 0)
		}
	default:
		ms := uintptr((d + time.Millisecond - 1) / time.Millisecond)
		if raw {
			n, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ms, 0, 0)
		} else {
			n, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ms, 0, 0)
		}
	}
	return int(n), e
}

// Wake wakes the loop wherever it sleeps: parked, or in (or about to
// enter) its wait. Call it after handing the loop its work, which the
// loop's pending function then sees. A wake-up left over makes the loop
// go round once more, nothing worse.
func (p *Poller) Wake() {
	if p.parked.Load() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	if p.waiting.Load() {
		p.wmu.Lock()
		if !p.closed {
			one := uint64(1)
			unix.RawSyscall(unix.SYS_WRITE, uintptr(p.wakefd), uintptr(unsafe.Pointer(&one)), 8)
		}
		p.wmu.Unlock()
	}
}

// Park sleeps, with nothing in flight, on a channel (which costs an idle
// process nothing, where a thread blocked in epoll_wait holds an OS
// thread) until Wake; pending is asked after the loop told wakers it
// parks: true skips the sleep.
func (p *Poller) Park(pending func() bool) {
	p.parked.Store(true)
	if !pending() {
		<-p.wake
	}
	p.parked.Store(false)
}

// Close closes the set (and the wake-up); the loop no longer waits on it.
// A Wake after Close does nothing.
func (p *Poller) Close() {
	p.wmu.Lock()
	p.closed = true
	p.wmu.Unlock()
	if p.wakefd >= 0 {
		unix.Close(p.wakefd)
	}
	unix.Close(p.epfd)
}
