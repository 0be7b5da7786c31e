package rawsock

import (
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newPoller(t *testing.T, p Policy, wake bool) *Poller {
	t.Helper()
	pl, err := NewPoller(p, wake)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// An event carries the token its socket was registered with; EPOLLOUT
// armed by Mod is reported, and Del stops the socket's events.
func TestPollerTokens(t *testing.T) {
	p := newPoller(t, Policy{}, false)
	defer p.Close()
	a, b := pair(t)
	tok := Token{Slot: 7, Gen: 1 << 31}
	if e := p.Add(b, unix.EPOLLIN, tok); e != 0 {
		t.Fatal(e)
	}
	Write(a, []byte("x"))
	ev := make([]unix.EpollEvent, 4)
	if n := p.Wait(ev, time.Second, nil); n != 1 || TokenOf(&ev[0]) != tok || ev[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("%d events, the first %+v; want one EPOLLIN for %v", n, ev[0], tok)
	}
	tok2 := Token{Slot: 7, Gen: 2}
	if e := p.Mod(b, unix.EPOLLOUT, tok2); e != 0 {
		t.Fatal(e)
	}
	if n := p.Wait(ev, time.Second, nil); n != 1 || TokenOf(&ev[0]) != tok2 || ev[0].Events != unix.EPOLLOUT {
		t.Fatalf("after Mod: %d events, %+v", n, ev[0])
	}
	p.Del(b)
	if n := p.Wait(ev, 0, nil); n != 0 {
		t.Errorf("after Del: %d events", n)
	}
}

// SetOut arms EPOLLOUT while wanted, and only then: a writable socket is
// reported writable while armed, never after it was disarmed; calls that
// change nothing make no system call (a closed descriptor would fail).
func TestSetOut(t *testing.T) {
	p := newPoller(t, Policy{}, false)
	defer p.Close()
	_, b := pair(t)
	tok := Token{Slot: 3, Gen: 9}
	if e := p.Add(b, unix.EPOLLIN, tok); e != 0 {
		t.Fatal(e)
	}
	ev := make([]unix.EpollEvent, 4)
	armed := false
	for _, want := range []bool{true, false, true, false} {
		if e := p.SetOut(b, unix.EPOLLIN, tok, &armed, want); e != 0 || armed != want {
			t.Fatalf("SetOut(%v): %v, armed %v", want, e, armed)
		}
		n := p.Wait(ev, 20*time.Millisecond, nil)
		if got := n == 1 && ev[0].Events&unix.EPOLLOUT != 0 && TokenOf(&ev[0]) == tok; got != want {
			t.Errorf("armed %v: %d events (%+v), want EPOLLOUT %v", want, n, ev[0], want)
		}
	}
	if e := p.SetOut(-1, unix.EPOLLIN, tok, &armed, false); e != 0 {
		t.Errorf("no change: %v, want no system call", e)
	}
	if e := p.SetOut(-1, unix.EPOLLIN, tok, &armed, true); e == 0 {
		t.Errorf("a change on a bad descriptor: no error, want epoll_ctl's")
	}
}

// A signal ends a wait, raw or not, and the loop goes round: a garbage
// collection's stop-the-world, which interrupts a raw wait with its
// preemption signal, is not held up by a loop in a long raw wait. (A wait
// retried at once after EINTR held collections for seconds.)
func TestWaitEndsAtASignal(t *testing.T) {
	p := newPoller(t, Policy{Raw: 3 * time.Second}, true)
	defer p.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		ev := make([]unix.EpollEvent, 4)
		for !stop.Load() {
			p.Wait(ev, 3*time.Second, nil)
		}
	})
	time.Sleep(20 * time.Millisecond)
	var worst time.Duration
	for range 5 {
		t0 := time.Now()
		runtime.GC()
		worst = max(worst, time.Since(t0))
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	p.Wake()
	wg.Wait()
	if worst > time.Second {
		t.Errorf("a garbage collection took %v while the loop waited raw", worst)
	}
}

// notInGo is the runtime's count of goroutines in a system call.
func notInGo() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A wait starts raw (the goroutine stays "in Go", holding its processor)
// and after Policy.Raw goes on as an ordinary system call (the runtime
// counts the goroutine in a system call and may give its processor away),
// wait after wait, as a loop goes round. Raw is 8ms here, below the 10ms
// after which the runtime interrupts a goroutine with a signal.
func TestWaitRawAtMost(t *testing.T) {
	if notInGo() != 0 {
		t.Skip("other goroutines in system calls")
	}
	p := newPoller(t, Policy{Raw: 8 * time.Millisecond, Yield: NoYield}, false)
	defer p.Close()
	var rawSeen bool
	var late []uint64
	for range 5 {
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			ev := make([]unix.EpollEvent, 4)
			t0 := time.Now()
			close(started)
			for time.Since(t0) < 200*time.Millisecond {
				p.Wait(ev, 200*time.Millisecond-time.Since(t0), nil)
			}
			close(done)
		}()
		<-started
		for t0 := time.Now(); time.Since(t0) < time.Millisecond; {
		}
		rawSeen = rawSeen || notInGo() == 0
		time.Sleep(100 * time.Millisecond)
		late = append(late, notInGo())
		<-done
		if rawSeen {
			break
		}
	}
	if !rawSeen {
		t.Error("1ms into a wait, the waiting goroutine was always in a system call: the wait is not raw first")
	}
	if slices.Contains(late, 0) {
		t.Errorf("100ms into a wait, goroutines in system calls: %v; want 1 (the wait is ordinary past Raw)", late)
	}
}

// With Policy.Yield 0 a wait yields first: a goroutine the loop made
// runnable runs before the loop waits (one processor).
func TestWaitYieldsFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newPoller(t, Policy{Raw: time.Millisecond}, false)
	defer p.Close()
	ev := make([]unix.EpollEvent, 4)
	var ran atomic.Bool
	go ran.Store(true)
	p.Wait(ev, 0, nil)
	if !ran.Load() {
		t.Error("the goroutine made runnable did not run before the wait")
	}
}

// A Yielder yields before every wait (0), at most once an interval, or
// never.
func TestYielder(t *testing.T) {
	count := func(every time.Duration) int {
		y := NewYielder(every)
		n := 0
		for now := time.Duration(0); now < 20*time.Millisecond; now += time.Millisecond {
			if y.Yield(now) {
				n++
			}
		}
		return n
	}
	if a, b, c := count(0), count(5*time.Millisecond), count(NoYield); a != 20 || b != 3 || c != 0 {
		t.Errorf("yields over 20 waits 1ms apart: %d, %d, %d; want 20 (every wait), 3 (every 5ms from 5ms), 0", a, b, c)
	}
}

// Wake reaches the loop wherever it sleeps: parked (Park returns), or in
// its wait (which ends early, the wake-up's own event taken out). Work
// handed over just before the loop sleeps is never missed.
func TestWake(t *testing.T) {
	p := newPoller(t, Policy{Raw: time.Millisecond}, true)
	defer p.Close()
	ev := make([]unix.EpollEvent, 4)
	go func() { time.Sleep(20 * time.Millisecond); p.Wake() }()
	t0 := time.Now()
	if n := p.Wait(ev, 10*time.Second, nil); n != 0 || time.Since(t0) > 5*time.Second {
		t.Fatalf("a woken wait: %d events after %v", n, time.Since(t0))
	}
	go func() { time.Sleep(20 * time.Millisecond); p.Wake() }()
	done := make(chan struct{})
	go func() { p.Park(func() bool { return false }); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a parked loop was not woken")
	}

	// The loop tells wakers it is about to sleep before it looks at its
	// work: a hand-over that comes while it looks (and finds nothing) still
	// wakes it; work already there is not slept on.
	handOver := func() bool { p.Wake(); return false }
	t0 = time.Now()
	if p.Wait(ev, 10*time.Second, handOver); time.Since(t0) > 5*time.Second {
		t.Error("a hand-over while the loop looked at its work did not end its wait")
	}
	parked := make(chan struct{})
	go func() { p.Park(handOver); p.Park(func() bool { return true }); close(parked) }()
	select {
	case <-parked:
	case <-time.After(5 * time.Second):
		t.Fatal("a hand-over while the loop looked at its work, or work already there, did not end its park")
	}
	t0 = time.Now()
	if p.Wait(ev, 10*time.Second, func() bool { return true }); time.Since(t0) > 5*time.Second {
		t.Error("the loop waited with work already there")
	}
}

// A Wake racing the loop's Close never writes to the closed wake-up's
// descriptor, whose number the next file opened may reuse.
func TestWakeAfterClose(t *testing.T) {
	p := newPoller(t, Policy{}, true)
	wfd := p.wakefd
	p.waiting.Store(true) // as if Wake had seen the loop in its wait
	p.Close()
	fds := make([]int, 2)
	if err := unix.Pipe2(fds, unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	p.Wake()
	if fds[0] != wfd && fds[1] != wfd {
		t.Skipf("the pipe took %v, not the wake-up's number %d", fds, wfd)
	}
	var b [8]byte
	r, _ := unix.Read(fds[0], b[:])
	if fds[1] == wfd && r > 0 {
		t.Error("Wake after Close wrote into the file that took its descriptor")
	}
}
