//go:build linux

package netloop

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is an in-process HTTP/1.1 server on 127.0.0.1 whose behaviour is
// chosen by the request path, for tests and benchmarks. Its request loop
// allocates nothing per request.
type server struct {
	ln       net.Listener
	addr     string
	requests atomic.Int64 // requests read
	accepted atomic.Int64 // connections accepted
	slow     atomic.Int64 // /slow waits this long (ns)
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

// Responses by path:
//
//	/ok       200, 2-byte body (keep-alive)
//	/500      500, keep-alive
//	/404      404
//	/chunked  200, chunked body, written in small pieces
//	/eof      200, body until the server closes
//	/mid      headers say 10 body bytes, 3 come, then close
//	/stall    no response, ever (until the test ends)
//	/slow     200 after s.slow
//	/once     200 without Connection: close, then the server closes anyway
//	/drop-second  200 to a connection's first request; its second is read, then the connection closed unanswered
//	/big      200, 1 MiB body
//	/garbage  not HTTP
var (
	respOK      = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
	resp500     = []byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops")
	resp404     = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	respChunked = []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
	respEOF     = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
	respMid     = []byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
	respBig     = append([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n"), bytes.Repeat([]byte("b"), 1<<20)...)
	respGarbage = []byte("SSH-2.0-OpenSSH_9.2\r\n\r\n")
)

func newServer(t testing.TB) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, addr: ln.Addr().String(), done: make(chan struct{}), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) close() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// serve reads requests (head and Content-Length body) and answers each
// once it has read it whole.
func (s *server) serve(c net.Conn) {
	buf := make([]byte, 64<<10)
	have := 0
	body := -1 // body bytes still to read; -1: reading a head
	var path []byte
	pathBuf := make([]byte, 0, 256)
	nth := 0 // requests read on this connection
	for {
		if have == len(buf) {
			return // head too large
		}
		n, err := c.Read(buf[have:])
		if err != nil {
			return
		}
		have += n
		for {
			if body < 0 {
				end := bytes.Index(buf[:have], []byte("\r\n\r\n"))
				if end < 0 {
					break
				}
				head := buf[:end]
				body = contentLength(head)
				path = append(pathBuf[:0], requestPath(head)...)
				copy(buf, buf[end+4:have])
				have -= end + 4
			}
			k := min(body, have)
			copy(buf, buf[k:have])
			have -= k
			body -= k
			if body > 0 {
				break
			}
			body = -1
			s.requests.Add(1)
			nth++
			if string(path) == "/drop-second" && nth >= 2 {
				return // closed without an answer, as after an idle close
			}
			if !s.respond(c, path) {
				return
			}
		}
	}
}

// respond writes the response for path and reports whether the connection
// stays open.
func (s *server) respond(c net.Conn, path []byte) bool {
	switch string(path) {
	case "/500":
		return write(c, resp500)
	case "/404":
		return write(c, resp404)
	case "/chunked":
		for i := 0; i < len(respChunked); i += 7 {
			if !write(c, respChunked[i:min(i+7, len(respChunked))]) {
				return false
			}
			time.Sleep(100 * time.Microsecond)
		}
		return true
	case "/eof":
		write(c, respEOF)
		return false
	case "/mid":
		write(c, respMid)
		return false
	case "/stall":
		<-s.done
		return false
	case "/slow":
		select {
		case <-time.After(time.Duration(s.slow.Load())):
		case <-s.done:
			return false
		}
		return write(c, respOK)
	case "/once":
		write(c, respOK)
		time.Sleep(time.Millisecond)
		return false
	case "/big":
		return write(c, respBig)
	case "/garbage":
		write(c, respGarbage)
		return false
	}
	return write(c, respOK)
}

func write(c net.Conn, b []byte) bool {
	_, err := c.Write(b)
	return err == nil
}

func requestPath(head []byte) []byte {
	sp := bytes.IndexByte(head, ' ')
	if sp < 0 {
		return nil
	}
	rest := head[sp+1:]
	if sp2 := bytes.IndexByte(rest, ' '); sp2 >= 0 {
		return rest[:sp2]
	}
	return rest
}

func contentLength(head []byte) int {
	const name = "\r\ncontent-length:"
	lower := head
	for i := 0; i+len(name) <= len(lower); i++ {
		if equalFoldASCII(lower[i:i+len(name)], name) {
			v := lower[i+len(name):]
			if e := bytes.IndexByte(v, '\r'); e >= 0 {
				v = v[:e]
			}
			n, _ := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n
		}
	}
	return 0
}

func equalFoldASCII(b []byte, s string) bool {
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// refusedAddr returns a loopback address where nothing listens.
func refusedAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
