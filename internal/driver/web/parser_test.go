package web

import (
	"testing"

	"github.com/throng-io/throng/internal/driver"
)

type parsed struct {
	done  bool
	used  int
	class driver.Class
	keep  bool
	stat  int
}

// feedAll feeds a response in pieces of size step (0: whole) and then, when
// atEOF, a close.
func feedAll(p *Parser, resp string, step int, atEOF bool) parsed {
	b := []byte(resp)
	used := 0
	done := false
	for used < len(b) && !done {
		end := len(b)
		if step > 0 {
			end = min(used+step, len(b))
		}
		n, d := p.Feed(b[used:end])
		used += n
		done = d
		if n < end-used && !d {
			break
		}
	}
	if !done && atEOF {
		done = p.EOF()
	}
	c, k := p.Result()
	return parsed{done, used, c, k, p.Status()}
}

var responses = []struct {
	name  string
	resp  string
	head  bool
	eof   bool
	want  parsed
	extra int // bytes after the response that must be left unused
}{
	{name: "nginx 1 byte", resp: "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nx",
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "no reason phrase", resp: "HTTP/1.1 204\r\n\r\n", want: parsed{done: true, class: driver.OK, keep: true, stat: 204}},
	{name: "chunked with extensions and trailers", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: v\r\n\r\n",
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "connection close", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
		want: parsed{done: true, class: driver.OK, keep: false, stat: 200}},
	{name: "HTTP/1.0 closes by default", resp: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		want: parsed{done: true, class: driver.OK, keep: false, stat: 200}},
	{name: "HTTP/1.0 keep-alive", resp: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: Keep-Alive\r\n\r\nok",
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "body until close", resp: "HTTP/1.1 200 OK\r\n\r\nsome body bytes", eof: true,
		want: parsed{done: true, class: driver.OK, keep: false, stat: 200}},
	{name: "HEAD ignores Content-Length", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", head: true,
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "304 has no body", resp: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", want: parsed{done: true, class: driver.OK, keep: true, stat: 304}},
	{name: "100 continue then 200", resp: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "404", resp: "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!", want: parsed{done: true, class: driver.Status4xx, keep: true, stat: 404}},
	{name: "503", resp: "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", want: parsed{done: true, class: driver.Status5xx, keep: true, stat: 503}},
	{name: "LF only line ends", resp: "HTTP/1.1 200 OK\nContent-Length: 1\n\nx", want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "pipelined bytes left over", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1", extra: 8,
		want: parsed{done: true, class: driver.OK, keep: true, stat: 200}},
	{name: "case-insensitive headers", resp: "HTTP/1.1 200 OK\r\ncOnTeNt-LeNgTh: 3\r\nCONNECTION: CLOSE\r\n\r\nabc",
		want: parsed{done: true, class: driver.OK, keep: false, stat: 200}},
	{name: "garbage status", resp: "SSH-2.0-OpenSSH\r\n", want: parsed{done: true, class: driver.Protocol, keep: false}},
	{name: "bad content length", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nx", want: parsed{done: true, class: driver.Protocol, keep: false, stat: 200}},
	{name: "conflicting content lengths", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", want: parsed{done: true, class: driver.Protocol, keep: false, stat: 200}},
	{name: "bad chunk size", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", want: parsed{done: true, class: driver.Protocol, keep: false, stat: 200}},
	{name: "header without colon", resp: "HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", want: parsed{done: true, class: driver.Protocol, keep: false, stat: 200}},
	{name: "incomplete body", resp: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", eof: true, want: parsed{done: false, class: driver.OK, keep: true, stat: 200}},
	{name: "status 999", resp: "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", want: parsed{done: true, class: driver.Protocol, keep: false, stat: 999}},
}

func TestParser(t *testing.T) {
	t.Parallel()
	for _, tt := range responses {
		for _, step := range []int{0, 1, 2, 3, 7, 64} {
			p := NewParser()
			p.Reset(tt.head)
			got := feedAll(p, tt.resp, step, tt.eof)
			want := tt.want
			want.used = len(tt.resp) - tt.extra
			if !want.done || want.class == driver.Protocol {
				// An incomplete response consumes what it got; a malformed one
				// stops where it went wrong (the connection is closed anyway).
				want.used = got.used
			}
			if got != want {
				t.Errorf("%s (pieces of %d): got %+v, want %+v", tt.name, step, got, want)
			}
		}
	}
}

func TestParserLineLimit(t *testing.T) {
	t.Parallel()
	p := NewParser()
	long := make([]byte, maxLine+10)
	for i := range long {
		long[i] = 'a'
	}
	_, done := p.Feed([]byte("HTTP/1.1 200 OK\r\nX: "))
	if done {
		t.Fatal("done too early")
	}
	for i := 0; i < len(long) && !done; i += 1000 {
		_, done = p.Feed(long[i:min(i+1000, len(long))])
	}
	if c, _ := p.Result(); !done || c != driver.Protocol {
		t.Errorf("a header line over %d bytes: done=%v class=%v", maxLine, done, c)
	}
}

func TestParserDoesNotAllocate(t *testing.T) {
	resp := []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nx")
	p := NewParser()
	allocs := testing.AllocsPerRun(1000, func() {
		p.Reset(false)
		// Split in two, as a read boundary would.
		n, _ := p.Feed(resp[:40])
		p.Feed(resp[n:])
	})
	if allocs != 0 {
		t.Errorf("parsing a response allocates %.1f times", allocs)
	}
}

// FuzzParserSplits checks that feeding a response in two pieces, split
// anywhere, gives the same result as feeding it whole, and that nothing
// panics on arbitrary bytes.
func FuzzParserSplits(f *testing.F) {
	for _, r := range responses {
		f.Add([]byte(r.resp), uint16(5))
	}
	f.Fuzz(func(t *testing.T, resp []byte, split uint16) {
		whole := NewParser()
		a := feedAll(whole, string(resp), 0, true)
		at := int(split) % (len(resp) + 1)
		p := NewParser()
		n, done := p.Feed(resp[:at])
		if !done {
			if n != at {
				t.Fatalf("consumed %d of %d bytes without finishing", n, at)
			}
			m, d := p.Feed(resp[at:])
			n, done = n+m, d
		}
		if !done {
			done = p.EOF()
		}
		c, k := p.Result()
		b := parsed{done, n, c, k, p.Status()}
		if a != b {
			t.Fatalf("whole %+v, split at %d %+v", a, at, b)
		}
	})
}

func BenchmarkParser(b *testing.B) {
	resp := []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 1\r\nLast-Modified: Sat, 21 Nov 2026 11:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6750b1a0-1\"\r\nAccept-Ranges: bytes\r\n\r\nx")
	p := NewParser()
	b.ReportAllocs()
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		p.Reset(false)
		p.Feed(resp)
	}
}
