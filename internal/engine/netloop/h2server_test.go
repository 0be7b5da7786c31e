//go:build linux

package netloop

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Server is a scripted HTTP/2 server without TLS (prior knowledge) for
// the frames nginx does not send on demand: each request is answered by
// the test's reply function, frame by frame, with x/net's Framer.
type h2Server struct {
	t     testing.TB
	ln    net.Listener
	wg    sync.WaitGroup
	conns atomic.Int64
	// reply answers the request for path on stream id of conn number
	// conn (from 1), its n-th request (from 1), through w.
	reply func(w *h2Writer, conn int64, n int, id uint32, path string)
	// hello, when set, is called once SETTINGS were exchanged.
	hello func(w *h2Writer)
	// pingAck receives the payloads of PING acknowledgements.
	pingAck chan [8]byte
}

// h2Writer writes frames on one connection; safe for one goroutine at a time.
type h2Writer struct {
	mu   sync.Mutex
	fr   *http2.Framer
	c    net.Conn
	enc  *hpack.Encoder
	hbuf bytes.Buffer
}

func newH2Server(t testing.TB, reply func(w *h2Writer, conn int64, n int, id uint32, path string)) *h2Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h2Server{t: t, ln: ln, reply: reply, pingAck: make(chan [8]byte, 16)}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *h2Server) addr() string { return s.ln.Addr().String() }

func (s *h2Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := s.conns.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.serve(c, n)
		}()
	}
}

func (s *h2Server) serve(c net.Conn, conn int64) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	w := &h2Writer{fr: http2.NewFramer(c, c), c: c}
	w.enc = hpack.NewEncoder(&w.hbuf)
	w.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	w.mu.Lock()
	w.fr.WriteSettings()
	w.mu.Unlock()
	n := 0
	for {
		f, err := w.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				w.mu.Lock()
				w.fr.WriteSettingsAck()
				w.mu.Unlock()
				if s.hello != nil {
					s.hello(w)
				}
			}
		case *http2.PingFrame:
			if f.IsAck() {
				s.pingAck <- f.Data
			}
		case *http2.MetaHeadersFrame:
			n++
			s.reply(w, conn, n, f.StreamID, f.PseudoValue("path"))
		}
	}
}

// headers writes a response's HEADERS with status.
func (w *h2Writer) headers(id uint32, status int, end bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hbuf.Reset()
	w.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	w.enc.WriteField(hpack.HeaderField{Name: "server", Value: "h2test"})
	w.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: w.hbuf.Bytes(), EndStream: end, EndHeaders: true})
}

func (w *h2Writer) data(id uint32, b []byte, end bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fr.WriteData(id, end, b)
}

func (w *h2Writer) ok(id uint32) {
	w.headers(id, 200, false)
	w.data(id, []byte("x"), true)
}

func (w *h2Writer) rst(id uint32, code http2.ErrCode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fr.WriteRSTStream(id, code)
}

func (w *h2Writer) goAway(last uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fr.WriteGoAway(last, http2.ErrCodeNo, nil)
}

func (w *h2Writer) ping(data [8]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fr.WritePing(false, data)
}
