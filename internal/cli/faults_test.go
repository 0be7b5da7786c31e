package cli

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// faultyServer listens on loopback and hands every connection to serve.
func faultyServer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

func readHead(r *bufio.Reader) bool {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if line == "\r\n" {
			return true
		}
	}
}

// A server that stalls or breaks its answers: the run still ends on time,
// and every failure is counted in its class.
func TestFaultyServersRunEndsOnTime(t *testing.T) {
	stall := faultyServer(t, func(c net.Conn) {
		defer c.Close()
		time.Sleep(10 * time.Second) // accepts, never answers
	})
	half := faultyServer(t, func(c net.Conn) {
		defer c.Close()
		if readHead(bufio.NewReader(c)) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a part"))
		}
	})
	garbage := faultyServer(t, func(c net.Conn) {
		defer c.Close()
		if readHead(bufio.NewReader(c)) {
			c.Write([]byte("220 smtp.example.com ESMTP ready\r\n\r\n"))
		}
	})
	file := filepath.Join(t.TempDir(), "faults.yaml")
	os.WriteFile(file, []byte("users: 2\ninterval: 500ms\nphases: {steady: 1500ms}\nweb: {timeout: 400ms}\nactions: [{path: /}]\n"), 0o644)
	for _, tt := range []struct {
		name, target, class string
	}{
		{"stall", stall, "timeout"},
		{"closes mid-response", half, "io"},
		{"not HTTP", garbage, "protocol"},
	} {
		for _, eng := range engines {
			t.Run(tt.name+"/"+eng, func(t *testing.T) {
				requireEngine(t, eng)
				start := time.Now()
				run := runResult(t, "run", file, "--target", tt.target, "--engine", eng)
				if took := time.Since(start); took > 4*time.Second {
					t.Errorf("the run took %v for a 1.5 s plan", took)
				}
				tot := total(run)
				if tot.Count == 0 || tot.Errors != tot.Count || tot.ErrorsByClass[tt.class] != tot.Count {
					t.Errorf("count %d errors %v, want all %s", tot.Count, tot.ErrorsByClass, tt.class)
				}
				if tt.class == "timeout" && (tot.Count < 4 || tot.Count > 10) {
					// 2 users x 1.5 s / 0.4 s timeout: about 8 timeouts.
					t.Errorf("%d timeouts, want about 8", tot.Count)
				}
				if run.Partial {
					t.Errorf("partial: %s", run.Reason)
				}
				_ = result.All
			})
		}
	}
}
