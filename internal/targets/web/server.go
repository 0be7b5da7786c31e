// Package web is the embedded reference web server: the zero-setup target
// of the web presets (`throng run web-static` with no server installed) and
// of `throng serve web`. It serves the IIS study's 1-byte page and a few routes
// that tests and scenarios use to provoke sizes, statuses and delays.
//
//	/ and /one.html   the 1-byte page "x"
//	/size/N           N bytes (at most 64 MiB)
//	/status/CODE      an empty response with that status (100-599)
//	/sleep/DURATION   the 1-byte page after a delay (at most 1 minute)
//	/echo             the request body back (any method)
//	/shop/...         the demo shop (shop.go): log-in, session cookie, CSRF, products, search, cart, check-out
//
// It speaks HTTP/1.1 and, on the same port, HTTP/2 with prior knowledge
// (h2c), so journeys can be run over either.
package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxSize bounds /size/N.
const MaxSize = 64 << 20

// Server is a running embedded web server.
type Server struct {
	ln  net.Listener
	srv *http.Server
	err chan error
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// Close.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, err: make(chan error, 1)}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	s.srv = &http.Server{
		Protocols:         protocols,
		Handler:           Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	if serr := <-s.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

var (
	onePage  = []byte("x")
	oneLen   = "1"
	htmlType = []string{"text/html"}
)

// Handler returns the server's routes.
func Handler() http.Handler {
	zeros := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB of filler
	shop := newShop()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case path == "/" || path == "/one.html":
			h := w.Header()
			h["Content-Type"] = htmlType
			h["Content-Length"] = []string{oneLen}
			w.Write(onePage)
		case strings.HasPrefix(path, "/size/"):
			n, err := strconv.Atoi(path[len("/size/"):])
			if err != nil || n < 0 || n > MaxSize {
				http.Error(w, "size must be 0.."+strconv.Itoa(MaxSize), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			for n > 0 {
				k := min(n, len(zeros))
				if _, err := w.Write(zeros[:k]); err != nil {
					return
				}
				n -= k
			}
		case strings.HasPrefix(path, "/status/"):
			code, err := strconv.Atoi(path[len("/status/"):])
			if err != nil || code < 100 || code > 599 {
				http.Error(w, "status must be 100..599", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(code)
		case strings.HasPrefix(path, "/sleep/"):
			d, err := time.ParseDuration(path[len("/sleep/"):])
			if err != nil || d < 0 || d > time.Minute {
				http.Error(w, "sleep must be a duration up to 1m", http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Length", oneLen)
			w.Write(onePage)
		case strings.HasPrefix(path, "/shop"):
			shop.ServeHTTP(w, r)
		case path == "/echo":
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxSize))
			if err != nil {
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	})
}
