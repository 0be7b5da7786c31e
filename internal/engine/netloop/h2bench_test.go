//go:build linux

package netloop

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/throng-io/throng/internal/testenv"
)

// BenchmarkH2Nginx drives b.N requests (1-byte page) through one io_uring
// or epoll thread, 100 users 25 to a connection, against nginx (which
// shares the machine: the figures are for allocations and regressions;
// bench/webh2 compares with h2load). allocs/req counts the whole process.
func BenchmarkH2Nginx(b *testing.B) {
	testenv.RequireBinary(b, "nginx", testenv.NginxPaths...)
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{HTTP2: true, KeepaliveRequests: 100_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer ng.Stop()
	for _, kind := range []string{IOUring, Epoll} {
		if Supported(kind) != nil {
			continue
		}
		b.Run(kind, func(b *testing.B) {
			iters := max(b.N/100, 20)
			p, cfg := setupH2(b, kind, 1, "users: 100\nclosed: {iterations: "+itoa(iters)+"}\nweb: {protocol: h2c, streams: 25}\nactions: [{path: /one.html}]\n", ng.H2CURL)
			h := newHarness(p, 1)
			var m1, m2 runtime.MemStats
			runtime.ReadMemStats(&m1)
			start := time.Now()
			b.ResetTimer()
			if err := Run(context.Background(), p, cfg, h.hooks()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			took := time.Since(start)
			runtime.ReadMemStats(&m2)
			n, _, errs := total(h.collect())
			if n != uint64(100*iters) || errs != ([len(errs)]uint64{}) {
				b.Fatalf("%d requests, errors%s", n, classErrors(errs))
			}
			b.ReportMetric(float64(m2.Mallocs-m1.Mallocs)/float64(n), "allocs/req")
			b.ReportMetric(float64(n)/took.Seconds(), "req/s")
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkH2Framer reads nginx's responses (captured from a real
// connection: HEADERS then DATA for each of 1,000 requests) with x/net's
// Framer and the header blocks decoded (ReadMetaHeaders), as a client on
// the Framer would; an op is a response. Beside BenchmarkH2Nginx's
// allocs/req, it is what the event loop's own framing (h2.go) saves.
func BenchmarkH2Framer(b *testing.B) {
	testenv.RequireBinary(b, "nginx", testenv.NginxPaths...)
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{HTTP2: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ng.Stop()
	stream, _ := captureH2(b, ng.H2CURL, 1000)
	r := bytes.NewReader(stream)
	fr := http2.NewFramer(io.Discard, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		f, err := fr.ReadFrame()
		if err != nil { // the end of the capture: from the start again
			r.Reset(stream)
			fr = http2.NewFramer(io.Discard, r)
			fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
			continue
		}
		if f.Header().Flags.Has(http2.FlagDataEndStream) && f.Header().Type == http2.FrameData {
			i++ // a response (HEADERS, DATA) read
		}
	}
}

// captureH2 sends n requests for /one.html over one h2c connection and
// returns the bytes the server sent after its SETTINGS acknowledgement.
func captureH2(b *testing.B, target string, n int) ([]byte, int) {
	u, _ := url.Parse(target)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var req bytes.Buffer
	fr := http2.NewFramer(&req, nil)
	req.WriteString(http2.ClientPreface)
	fr.WriteSettings()
	fr.WriteWindowUpdate(0, 1<<30)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: u.Host}, {Name: ":path", Value: "/one.html"}} {
			enc.WriteField(f)
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		if i%100 == 99 { // within nginx's 128 concurrent streams
			c.Write(req.Bytes())
			req.Reset()
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.Write(req.Bytes())
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	all, _ := io.ReadAll(c)
	// Skip the frames before the first response (SETTINGS, WINDOW_UPDATE, ACK).
	rd := http2.NewFramer(nil, bytes.NewReader(all))
	off := 0
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			b.Fatalf("no response in %d bytes", len(all))
		}
		if f.Header().Type == http2.FrameHeaders {
			break
		}
		off += 9 + int(f.Header().Length)
	}
	return all[off:], n
}
