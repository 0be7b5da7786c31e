package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, the client's
// wrapped by quiet.
func tcpPair(t *testing.T) (*quietConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	q, ok := Quiet(nc).(*quietConn)
	if !ok {
		t.Fatal("a TCP connection was not wrapped")
	}
	t.Cleanup(func() { q.Close(); srv.Close() })
	return q, srv
}

// quietConn behaves as net.Conn: every byte of many buffers arrives in
// order however slowly the peer reads (partial writev, waits for room),
// reads see what the peer wrote, a deadline is a timeout, the peer's close
// is io.EOF, and writing to a reset connection is class io.
func TestQuietConn(t *testing.T) {
	q, srv := tcpPair(t)
	var want bytes.Buffer
	var bufs net.Buffers
	for i := range 150 { // more than one writev's 64 buffers, 6 MB in all
		b := bytes.Repeat([]byte{byte(i)}, 1+i*800)
		bufs = append(bufs, b)
		want.Write(b)
	}
	bufs = append(bufs, nil, []byte("end"))
	want.WriteString("end")
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		chunk := make([]byte, 16<<10)
		for b.Len() < want.Len() {
			n, err := srv.Read(chunk)
			b.Write(chunk[:n])
			if err != nil {
				break
			}
			time.Sleep(50 * time.Microsecond) // a slow reader: the socket fills
		}
		got <- b.Bytes()
	}()
	n, err := q.WriteBuffers(&bufs)
	if err != nil || n != int64(want.Len()) || len(bufs) != 0 {
		t.Fatalf("writeBuffers: %d of %d bytes, %v, %d buffers left", n, want.Len(), err, len(bufs))
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("the peer read %d bytes, not the %d written in order", len(b), want.Len())
	}

	srv.Write([]byte("* OK hello\r\n"))
	p := make([]byte, 64)
	if n, err := q.Read(p); err != nil || string(p[:n]) != "* OK hello\r\n" {
		t.Fatalf("read %q, %v", p[:n], err)
	}
	q.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := q.Read(p); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	q.SetReadDeadline(time.Time{})
	srv.Close()
	if _, err := q.Read(p); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want io.EOF", err)
	}
	var werr error
	for i := 0; i < 100 && werr == nil; i++ { // the first writes may still be taken
		_, werr = q.Write([]byte("a LOGOUT\r\n"))
		time.Sleep(time.Millisecond)
	}
	var oe *net.OpError
	if !errors.As(werr, &oe) || oe.Op != "write" {
		t.Errorf("write to a closed peer: %v, want a *net.OpError of write", werr)
	}
}

// Concurrent writers, as net.Conn allows: every line arrives whole.
func TestQuietConnConcurrentWrites(t *testing.T) {
	q, srv := tcpPair(t)
	const writers, lines = 8, 200
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			line := bytes.Repeat([]byte{'a' + byte(w)}, 99)
			line = append(line, '\n')
			for range lines {
				if _, err := q.Write(line); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(srv, writers*lines*100))
		got <- b
	}()
	for range writers {
		<-done
	}
	b := <-got
	for i, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(l) != 99 || bytes.Count(l, l[:1]) != 99 {
			t.Fatalf("line %d mixed or cut: %q", i, l)
		}
	}
}
