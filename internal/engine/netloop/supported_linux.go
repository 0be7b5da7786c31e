package netloop

import (
	"errors"
	"fmt"
	"github.com/throng-io/throng/internal/rawsock"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

var errKernelTooOld = errors.New("io_uring: the kernel lacks a feature the loop needs (EXT_ARG waits, CQE_SKIP_SUCCESS, NODROP: Linux 5.17 or later)")

func newIO(kind string, l *loop, sa *rawsock.Addr, conns int) (ioLayer, error) {
	if kind == IOUring {
		u, err := newURingIO(l, sa, conns)
		if err != nil {
			return nil, fmt.Errorf("netloop io_uring: %w", err)
		}
		return u, nil
	}
	e, err := newEpoller(l, sa)
	if err != nil {
		return nil, fmt.Errorf("netloop epoll: %w", err)
	}
	return e, nil
}

func supported(kind string) error {
	if kind == Epoll {
		return nil
	}
	return probeURing()
}

// probeURing tries, once per process, what the io_uring loop does: a ring
// with its setup flags on a locked thread, a provided-buffer ring, and a
// multishot receive that delivers data and stays armed.
var probeURing = sync.OnceValue(func() error {
	if v := ioUringDisabled(); v == "2" {
		return errors.New("io_uring is disabled on this machine (/proc/sys/kernel/io_uring_disabled is 2)")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- probeOnThread()
	}()
	return <-errc
})

func probeOnThread() error {
	r, err := newURing(8, 16)
	if err != nil {
		return err
	}
	defer r.close()
	if r.features&(featExtArg|featCQESkip|featNoDrop) != featExtArg|featCQESkip|featNoDrop {
		return errKernelTooOld
	}
	br, err := newBufRing(r, 8, 4096)
	if err != nil {
		return err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		br.unregister(r)
		br.free()
		return fmt.Errorf("io_uring probe: socketpair: %w", err)
	}
	armed := false
	defer func() {
		unix.Shutdown(fds[0], unix.SHUT_RDWR)
		unix.Close(fds[1])
		// Let the receive end before the buffers go.
		for deadline := time.Now().Add(time.Second); armed && time.Now().Before(deadline); {
			r.enter(1, 10*time.Millisecond, 0)
			head, tail := *r.cqHead, loadAcquire(r.cqTail)
			for ; head != tail; head++ {
				if r.cqes[head&r.cqMask].flags&cqeFMore == 0 {
					armed = false
				}
			}
			storeRelease(r.cqHead, head)
		}
		unix.Close(fds[0])
		if !armed {
			br.unregister(r)
			br.free()
		}
	}()
	i, _ := r.reserve(1)
	s := r.at(i)
	s.opcode = opRecv
	s.fd = int32(fds[0])
	s.ioprio = recvMultishot
	s.flags = sqeBufferSelect
	s.userData = 1
	armed = true
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		return fmt.Errorf("io_uring probe: %w", err)
	}
	var got *cqe
	for deadline := time.Now().Add(time.Second); got == nil && time.Now().Before(deadline); {
		if e := r.enter(1, 100*time.Millisecond, 0); e != 0 && e != unix.ETIME && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY {
			return fmt.Errorf("io_uring_enter: %w", e)
		}
		if head := *r.cqHead; head != loadAcquire(r.cqTail) {
			c := r.cqes[head&r.cqMask]
			got = &c
			if c.flags&cqeFMore == 0 {
				armed = false
			}
			storeRelease(r.cqHead, head+1)
		}
	}
	switch {
	case got == nil:
		return errors.New("io_uring probe: a receive got no completion within 1s")
	case got.res == -int32(unix.EINVAL):
		return errors.New("io_uring: the kernel has no multishot receive (Linux 6.0)")
	case got.res != 1 || got.flags&cqeFBuffer == 0:
		return fmt.Errorf("io_uring probe: multishot receive returned %d (flags %#x)", got.res, got.flags)
	case got.flags&cqeFMore == 0:
		return errors.New("io_uring: a multishot receive did not stay armed")
	}
	return nil
}

func loadAcquire(p *uint32) uint32     { return atomic.LoadUint32(p) }
func storeRelease(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
