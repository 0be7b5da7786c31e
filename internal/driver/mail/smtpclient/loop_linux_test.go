package smtpclient

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"

	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

// A server that pauses before reading the message makes the loop's
// writes come up short (16 MB is more than the socket buffers hold): the
// rest waits for the socket to drain and the server still gets the
// message byte for byte, dots stuffed. The bytes counted are the bytes on
// the wire.
func TestSubmitLoopShortWrites(t *testing.T) {
	line := append(bytes.Repeat([]byte("x"), 998), "\r\n"...)
	msg := bytes.Repeat(append(append([]byte(nil), line...), append([]byte("."), line[1:]...)...), 8000) // 16 MB
	got := make(chan []byte, 1)
	addr := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) {
		nc.Write([]byte("220 slow.test\r\n"))
		r.ReadString('\n')
		nc.Write([]byte("250-slow.test\r\n250 PIPELINING\r\n"))
		for range 3 {
			r.ReadString('\n')
		}
		nc.Write([]byte("250 ok\r\n250 ok\r\n354 go on\r\n"))
		time.Sleep(300 * time.Millisecond)
		var data []byte
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			if string(line) == ".\r\n" {
				break
			}
			data = append(data, line...)
		}
		got <- data
		nc.Write([]byte("250 queued\r\n"))
		r.ReadString('\n')
		nc.Write([]byte("221 bye\r\n"))
	})
	var calls []string
	tx := testTxn([]string{"u@x"}, msg, 20*time.Second, &calls)
	l := testLoop(t)
	sa, err := rawsock.Resolve(addr)
	if err != nil {
		t.Fatal(err)
	}
	in, out := l.Submit(context.Background(), tx, sa, 20*time.Second)
	if tx.err != nil || strings.Join(calls, " ") != "e[] a" {
		t.Fatalf("send: %v, calls %v", tx.err, calls)
	}
	if tx.drains == 0 {
		t.Error("no write came up short: the test did not test the drain")
	}
	data := <-got
	if want := bytes.ReplaceAll(msg, []byte("\n."), []byte("\n..")); !bytes.Equal(data, want) {
		t.Errorf("the server got %d bytes, want %d (the message dot-stuffed)", len(data), len(want))
	}
	if wantOut := int64(len("EHLO c\r\nMAIL FROM:<f@x>\r\nRCPT TO:<u@x>\r\nDATA\r\n.\r\nQUIT\r\n") + len(data)); out != wantOut {
		t.Errorf("bytes out %d, want %d", out, wantOut)
	}
	if wantIn := int64(len("220 slow.test\r\n250-slow.test\r\n250 PIPELINING\r\n250 ok\r\n250 ok\r\n354 go on\r\n250 queued\r\n221 bye\r\n")); in != wantIn {
		t.Errorf("bytes in %d, want %d", in, wantIn)
	}
}

// Faults through the loop: nobody listening is class dial; a server that
// hangs up after its greeting is class io; a sender whose context ends
// (the run stops) gets its answer at once although the server stalls; and
// the loop serves the next sender after each.
func TestSubmitLoopFaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	hangup := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) { nc.Write([]byte("220 bye\r\n")) })
	stall := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) })
	ok := mailtest.FakeSMTP(t, false, "")
	l := testLoop(t)
	send := func(ctx context.Context, addr string) error {
		sa, err := rawsock.Resolve(addr)
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		tx := testTxn([]string{"u@x"}, []byte("b\r\n"), 10*time.Second, &calls)
		l.Submit(ctx, tx, sa, 10*time.Second)
		return tx.err
	}
	check := func(what string, err error, class driver.Class) {
		t.Helper()
		if driver.Classify(err) != class {
			t.Errorf("%s: %v (class %v), want class %v", what, err, driver.Classify(err), class)
		}
		if err := send(context.Background(), ok); err != nil {
			t.Errorf("after %s, a good server (one command at a time): %v", what, err)
		}
	}
	check("nobody listening", send(context.Background(), closed), driver.Dial)
	check("hang-up after the greeting", send(context.Background(), hangup), driver.IO)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = send(ctx, stall)
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("a stopped sender waited %v", el)
	}
	check("stopped", err, driver.IO)
}

// testLoop starts a submission loop that the test's end closes.
func testLoop(t *testing.T) *Loop {
	t.Helper()
	l, err := NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// Close ends what the loop holds: a send in flight (its server stalls) is
// stopped at once, class io; Close returns when the loop's goroutine has
// ended; a send after Close fails at once; Close again does nothing.
func TestSubmitLoopClose(t *testing.T) {
	stall := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) })
	sa, err := rawsock.Resolve(stall)
	if err != nil {
		t.Fatal(err)
	}
	before, fds := runtime.NumGoroutine(), openFDs(t)
	l, err := NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	tx := testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
	done := make(chan struct{})
	go func() { l.Submit(context.Background(), tx, sa, time.Minute); close(done) }()
	time.Sleep(50 * time.Millisecond) // the loop has it, awaiting the greeting
	t0 := time.Now()
	l.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a send in flight was not ended by Close")
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Close took %v", el)
	}
	if driver.Classify(tx.err) != driver.IO || !strings.Contains(tx.err.Error(), "SMTP EHLO: stopped") {
		t.Errorf("the send in flight: %v (class %v), want io, stopped at EHLO", tx.err, driver.Classify(tx.err))
	}
	tx = testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
	l.Submit(context.Background(), tx, sa, time.Minute)
	if tx.err != ErrLoopClosed {
		t.Errorf("a send after Close: %v", tx.err)
	}
	l.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before the loop started", runtime.NumGoroutine(), before)
		}
	}
	// The epoll set, its eventfd and the socket of the send in flight are
	// closed (the server's end closes when it reads the end of stream).
	for deadline := time.Now().Add(5 * time.Second); openFDs(t) != fds; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open after Close, %d before the loop started", openFDs(t), fds)
		}
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
