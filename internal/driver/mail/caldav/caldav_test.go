package caldav

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// wireServer answers every HTTP/1.1 request with the next of replies (raw
// bytes, Content-Length set) on one kept-alive connection, and counts the
// bytes each request and reply took on the wire.
type wireServer struct {
	mu       sync.Mutex
	reqBytes []int // per request: the bytes read for it
	paths    []string
}

func (w *wireServer) serve(t *testing.T, replies []string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		for _, reply := range replies {
			n, path := 0, ""
			clen := 0
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				n += len(line)
				if path == "" {
					path = strings.Fields(line)[1]
				}
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
					clen, _ = strconv.Atoi(strings.TrimSpace(v))
				}
				if line == "\r\n" {
					break
				}
			}
			io.CopyN(io.Discard, r, int64(clen))
			w.mu.Lock()
			w.reqBytes, w.paths = append(w.reqBytes, n+clen), append(w.paths, path)
			w.mu.Unlock()
			nc.Write([]byte(reply))
		}
	}()
	return "http://" + ln.Addr().String() + "/dav/"
}

func reply(status, body string) string {
	return "HTTP/1.1 " + status + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// Each request's bytes are what its connection moved for it (request and
// answer, as the server saw and sent them), on a reused connection too;
// the base path prefixes the request's; statuses from 400 are classed
// (401 auth, 4xx, 5xx) with the server's text, a REPORT answered other
// than 207 or 200 is class protocol.
func TestClient(t *testing.T) {
	replies := []string{
		reply("201 Created", ""),
		reply("207 Multi-Status", "<multistatus/>"),
		reply("401 Unauthorized", "who are you"),
		reply("404 Not Found", "no such calendar"),
		reply("503 Service Unavailable", "busy"),
		reply("204 No Content", ""),
	}
	ws := &wireServer{}
	base, err := url.Parse(ws.serve(t, replies))
	if err != nil {
		t.Fatal(err)
	}
	d := New(base, 5*time.Second, false)
	ctx := context.Background()
	res, err := d.Put(ctx, "u1", "pw", CalPath("u1")+"x.ics", "text/calendar", []byte("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"))
	if err != nil || res.Status != 201 {
		t.Fatalf("PUT: %v, status %d", err, res.Status)
	}
	start := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	res2, err := d.TimeRange(ctx, "u1", "pw", start, start.AddDate(0, 0, 7))
	if err != nil || res2.Status != 207 || string(res2.Body) != "<multistatus/>" {
		t.Fatalf("REPORT: %v, status %d, body %q", err, res2.Status, res2.Body)
	}
	ws.mu.Lock()
	reqs, paths := append([]int(nil), ws.reqBytes...), append([]string(nil), ws.paths...)
	ws.mu.Unlock()
	for i, r := range []Result{res, res2} {
		if r.Out != int64(reqs[i]) || r.In != int64(len(replies[i])) {
			t.Errorf("request %d: %d bytes out, %d in; the server read %d and sent %d", i, r.Out, r.In, reqs[i], len(replies[i]))
		}
	}
	if paths[0] != "/dav/u1/calendar/x.ics" || paths[1] != "/dav/u1/calendar/" {
		t.Errorf("paths %q", paths)
	}
	for _, c := range []struct {
		class driver.Class
		text  string
	}{{driver.Auth, "who are you"}, {driver.Status4xx, "no such calendar"}, {driver.Status5xx, "busy"}} {
		_, err := d.Put(ctx, "u1", "pw", CalPath("u1")+"y.ics", "text/calendar", nil)
		if driver.Classify(err) != c.class || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%v (class %v), want %v with %q", err, driver.Classify(err), c.class, c.text)
		}
	}
	if _, err := d.FreeBusy(ctx, "u1", "pw", start, start.AddDate(0, 0, 1)); driver.Classify(err) != driver.Protocol {
		t.Errorf("REPORT answered 204: %v (class %v), want protocol", err, driver.Classify(err))
	}
	if got := ICalTime(time.Date(2026, 1, 5, 9, 30, 0, 0, time.FixedZone("x", 3600))); got != "20260105T083000Z" {
		t.Errorf("ICalTime: %s", got)
	}
}
