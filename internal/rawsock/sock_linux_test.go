package rawsock

import (
	"bytes"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a connected pair of non-blocking stream sockets whose sending
// side takes little at a time.
func pair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// drain reads fd until it has got n bytes (or 5 s passed).
func drain(t *testing.T, fd, n int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(5 * time.Second); len(got) < n && time.Now().Before(deadline); {
		k, e := Read(fd, buf)
		if e == unix.EAGAIN {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if e != 0 || k == 0 {
			t.Fatalf("read: %d, %v", k, e)
		}
		got = append(got, buf[:k]...)
	}
	return got
}

// Flush hands the socket as much as it takes of many buffers (more than
// one call's 64, empty ones among them), in order: when the socket is full
// it returns with the rest and no error, consuming exactly what went out;
// called again when there is room it sends the rest. It does not allocate.
func TestFlush(t *testing.T) {
	a, b := pair(t)
	var bufs net.Buffers
	var want []byte
	for i := range 150 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i*37)
		bufs = append(bufs, p, nil)
		want = append(want, p...)
	}
	var sent int64
	var got []byte
	short := 0
	for len(bufs) > 0 {
		before := bytesIn(bufs)
		n, e := Flush(a, &bufs)
		if e != 0 {
			t.Fatalf("flush: %v", e)
		}
		if bytesIn(bufs) != before-n {
			t.Fatalf("flush wrote %d bytes but consumed %d", n, before-bytesIn(bufs))
		}
		sent += n
		if len(bufs) > 0 {
			short++
			got = append(got, drain(t, b, int(sent)-len(got))...)
		}
	}
	got = append(got, drain(t, b, int(sent)-len(got))...)
	if short == 0 {
		t.Error("the socket was never full: the test did not test a short flush")
	}
	if sent != int64(len(want)) || !bytes.Equal(got, want) {
		t.Fatalf("sent %d, the peer got %d bytes (equal: %v); want %d", sent, len(got), bytes.Equal(got, want), len(want))
	}
	small := net.Buffers{[]byte("ab"), []byte("cd")}
	rbuf := make([]byte, 8)
	if allocs := testing.AllocsPerRun(100, func() {
		bs := small
		if n, e := Flush(a, &bs); n != 4 || e != 0 {
			t.Fatalf("flush: %d, %v", n, e)
		}
		if n, e := Read(b, rbuf); n != 4 || e != 0 {
			t.Fatalf("read: %d, %v", n, e)
		}
	}); allocs != 0 {
		t.Errorf("Flush allocates %.1f times a call", allocs)
	}
}

func bytesIn(b net.Buffers) int64 {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return int64(n)
}

// Write takes what the socket takes and says how much; a broken
// connection is EPIPE for Write and Flush alike, and raises no SIGPIPE.
func TestWriteAndBrokenPipe(t *testing.T) {
	a, b := pair(t)
	big := make([]byte, 1<<20)
	n, e := Write(a, big)
	if e != 0 || n == 0 || n >= len(big) {
		t.Fatalf("write to a socket that takes less: %d of %d, %v", n, len(big), e)
	}
	if got := drain(t, b, n); len(got) != n {
		t.Fatalf("the peer got %d of %d", len(got), n)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE)
	defer signal.Stop(sig)
	unix.Close(b)
	if _, e := Write(a, []byte("x")); e != unix.EPIPE {
		t.Errorf("write to a closed peer: %v, want EPIPE", e)
	}
	bufs := net.Buffers{[]byte("x")}
	if _, e := Flush(a, &bufs); e != unix.EPIPE {
		t.Errorf("flush to a closed peer: %v, want EPIPE", e)
	}
	select {
	case <-sig:
		t.Error("a write to a broken connection raised SIGPIPE")
	case <-time.After(50 * time.Millisecond):
	}
}

// Read: EAGAIN when nothing is there, the bytes when some are, 0 at the
// end of the stream.
func TestRead(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 16)
	if n, e := Read(b, buf); e != unix.EAGAIN || n != 0 {
		t.Errorf("nothing there: %d, %v; want EAGAIN", n, e)
	}
	Write(a, []byte("hello"))
	if n, e := Read(b, buf); e != 0 || string(buf[:n]) != "hello" {
		t.Errorf("read %q, %v", buf[:n], e)
	}
	unix.Shutdown(a, unix.SHUT_WR)
	if n, e := Read(b, buf); e != 0 || n != 0 {
		t.Errorf("at the end: %d, %v; want 0 and no error", n, e)
	}
}

// Connect and Err: a connection to a listener succeeds (at once or once
// writable); one to a closed loopback port fails, then or in Err.
func TestConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().String()
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln2.Addr().String()
	ln2.Close()
	defer ln.Close()
	outcome := func(hostport string) syscall.Errno {
		sa, err := Resolve(hostport)
		if err != nil {
			t.Fatal(err)
		}
		fd, e := Socket(sa.Family)
		if e != 0 {
			t.Fatal(e)
		}
		defer Close(fd)
		switch e := Connect(fd, sa); e {
		case 0:
			return 0
		case unix.EINPROGRESS:
		default:
			return e
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		unix.Poll(pfd, 5000)
		return Err(fd)
	}
	if e := outcome(open); e != 0 {
		t.Errorf("connect to a listener: %v", e)
	}
	if e := outcome(closed); e != unix.ECONNREFUSED {
		t.Errorf("connect to a closed port: %v, want ECONNREFUSED", e)
	}
	if _, err := Resolve("127.0.0.1"); err == nil {
		t.Error("an address without a port resolved")
	}
}
