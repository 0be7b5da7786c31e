package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// transports: every agent test that is about the wire runs over TLS and
// over plaintext.
var transports = []struct {
	name     string
	insecure bool
}{{"tls", false}, {"plaintext", true}}

// agentFor starts one agent over the transport.
func agentFor(t *testing.T, insecure bool, r Runner, s *Server) (string, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	if s == nil {
		s = &Server{}
	}
	s.Token, s.Runner, s.Log = token, r, log
	if !insecure {
		s.TLS = ServerTLS(testCert(t))
	}
	return startServer(t, s), log
}

// dialAs connects to addr as an unauthenticated peer speaking the
// transport (TLS done, nothing else said).
func dialAs(t *testing.T, addr string, insecure bool) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if insecure {
		return raw
	}
	return tlsControllerSide(t, raw)
}

// A peer that sends a 1 GB greeting (streamed from one 64 KiB buffer,
// never allocated) is cut off after a few KiB: the agent's heap does not
// grow with it. (One connection sending 1 GB left an agent holding 2.15
// GB when the greeting was read with an unbounded ReadString.)
func TestGreetingFloodIsBounded(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			addr, log := agentFor(t, tr.insecure, &fakeRunner{}, nil)
			conn := dialAs(t, addr, tr.insecure)
			defer conn.Close()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			chunk := bytes.Repeat([]byte("A"), 64<<10)
			const total = 1 << 30
			const limit = 32 << 20 // growth of the heap allowed
			conn.SetWriteDeadline(time.Now().Add(60 * time.Second))
			var sent int64
			var peak uint64
			for sent < total {
				n, err := conn.Write(chunk)
				sent += int64(n)
				if err != nil {
					break
				}
				if sent%(8<<20) == 0 {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, base))
					if peak > 256<<20 {
						t.Fatalf("the heap grew by %d MB after %d MB sent: the greeting is being kept", peak>>20, sent>>20)
					}
				}
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, base))
			if sent >= total {
				t.Errorf("the agent read the whole 1 GB greeting")
			}
			if peak > limit {
				t.Errorf("the heap grew by %d MB", peak>>20)
			}
			if !waitUntil(5*time.Second, func() bool { return strings.Contains(log.String(), "more than 256 bytes without a line break") }) {
				t.Errorf("agent log: %s", log)
			}
			t.Logf("%d KB sent before the agent closed; heap growth at most %d KB", sent>>10, peak>>10)
		})
	}
}

func waitUntil(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Idle connections that never authenticate are limited (the oldest of the
// busiest address is dropped for a new one) and closed after the
// authentication timeout; a controller still gets through in the middle
// of them.
func TestUnauthenticatedConnectionsLimitedAndTimedOut(t *testing.T) {
	const maxPending, idle = 4, 12
	const timeout = time.Second
	srv := &Server{MaxPending: maxPending, AuthTimeout: timeout}
	addr, log := agentFor(t, false, &fakeRunner{intervals: 2}, srv)
	var closed atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	lasted := make([]time.Duration, idle)
	for i := range idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(timeout + 10*time.Second))
			io.Copy(io.Discard, c) // until the agent closes it
			lasted[i] = time.Since(start)
			closed.Add(1)
		}()
	}
	// The first idle-maxPending are dropped as the later ones come.
	if !waitUntil(5*time.Second, func() bool { return closed.Load() >= idle-maxPending }) {
		t.Errorf("%d of %d idle connections closed: the limit did not hold", closed.Load(), idle)
	}
	// A controller, while maxPending idle connections wait.
	run, err := (&Controller{Agents: []string{addr}, Token: token, Plan: PlanRequest{Source: "x"}}).Run(context.Background())
	if err != nil || run.Partial {
		t.Errorf("a controller during the flood: %v", err)
	}
	wg.Wait()
	for i, d := range lasted {
		if d > timeout+5*time.Second {
			t.Errorf("idle connection %d lasted %v (timeout %v)", i, d, timeout)
		}
	}
	srv.pmu.Lock()
	peak := srv.peakPending
	srv.pmu.Unlock()
	if peak > maxPending {
		t.Errorf("%d connections waited to authenticate at once, limit %d", peak, maxPending)
	}
	if !waitUntil(2*time.Second, func() bool { return srv.Pending() == 0 }) {
		t.Errorf("%d still pending", srv.Pending())
	}
	for _, want := range []string{"dropped: more than 4 connections were waiting to authenticate", "not authenticated within 1s"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// A controller that pins a fingerprint refuses an agent with another
// certificate; the right pin is accepted.
func TestPinnedFingerprint(t *testing.T) {
	r := &fakeRunner{intervals: 2}
	addr, log := agentFor(t, false, r, nil)
	wrong := "sha256:" + strings.Repeat("0", 64)
	_, err := (&Controller{Agents: []string{addr}, Token: token, Pins: []string{wrong}, Plan: PlanRequest{Source: "x"}}).Run(context.Background())
	var pe *PinError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "not pinned") || pe.Got != Fingerprint(testCert(t).Certificate[0]) {
		t.Fatalf("wrong pin: %v", err)
	}
	if !waitUntil(2*time.Second, func() bool { return strings.Contains(log.String(), "TLS handshake") }) || r.running.Load() != 0 {
		t.Errorf("agent log %q", log)
	}
	right := Fingerprint(testCert(t).Certificate[0])
	if _, err := (&Controller{Agents: []string{addr}, Token: token, Pins: []string{wrong, right}, Plan: PlanRequest{Source: "x"}}).Run(context.Background()); err != nil {
		t.Errorf("right pin: %v", err)
	}
}

// relay is a man in the middle between controllers and one agent: it
// passes bytes (tamper may change them on the way to the agent) or, with
// its own certificate, ends each side's TLS itself and relays what is
// inside.
type relay struct {
	agent  string
	tamper func(offset int64, p []byte) // on controller -> agent bytes
	tlsCfg *tls.Config                  // non-nil: terminate TLS on both sides
}

func (m *relay) start(t *testing.T) string {
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
			go m.serve(c)
		}
	}()
	return ln.Addr().String()
}

func (m *relay) serve(c net.Conn) {
	defer c.Close()
	a, err := net.Dial("tcp", m.agent)
	if err != nil {
		return
	}
	defer a.Close()
	var up, down net.Conn = a, c
	if m.tlsCfg != nil {
		ts := tls.Server(c, m.tlsCfg)
		ta := tls.Client(a, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		if ts.Handshake() != nil || ta.Handshake() != nil {
			return
		}
		up, down = ta, ts
	}
	go func() { io.Copy(down, up); down.Close() }()
	buf := make([]byte, 32<<10)
	var off int64
	for {
		n, err := down.Read(buf)
		if n > 0 {
			if m.tamper != nil {
				m.tamper(off, buf[:n])
			}
			off += int64(n)
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			up.Close()
			return
		}
	}
}

// One byte changed on the way (inside the plan, past the handshake) is
// refused: by TLS's own record check, or by the frame's HMAC in
// plaintext. Nothing runs.
func TestTamperedStreamIsRefused(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r := &fakeRunner{intervals: 2}
			addr, log := agentFor(t, tr.insecure, r, nil)
			const at = 8000 // the handshake takes < 2 KB; the plan is 20 KB
			var flipped atomic.Bool
			m := &relay{agent: addr, tamper: func(off int64, p []byte) {
				if off <= at && at < off+int64(len(p)) {
					p[at-off] ^= 0x20
					flipped.Store(true)
				}
			}}
			plan := PlanRequest{Source: "users: 12 #" + strings.Repeat("x", 20000)}
			_, err := (&Controller{Agents: []string{m.start(t)}, Token: token, Insecure: tr.insecure, Plan: plan}).Run(context.Background())
			if err == nil || !flipped.Load() {
				t.Fatalf("a tampered plan was run (flipped %v): %v", flipped.Load(), err)
			}
			want := "bad record MAC"
			if tr.insecure {
				want = "failed its check"
			}
			if !waitUntil(2*time.Second, func() bool { return strings.Contains(log.String(), want) }) || r.running.Load() != 0 {
				t.Errorf("agent log lacks %q: %s", want, log)
			}
			// Untouched, the same relay passes the same plan.
			m.tamper = nil
			if _, err := (&Controller{Agents: []string{m.start(t)}, Token: token, Insecure: tr.insecure, Plan: plan}).Run(context.Background()); err != nil {
				t.Errorf("through an honest relay: %v", err)
			}
		})
	}
}

// A man in the middle with a certificate of its own, against a controller
// that pinned nothing: the token proofs are bound to each TLS session, so
// they do not pass from one session to the other, and both sides refuse.
func TestManInTheMiddleFailsTheBoundProofs(t *testing.T) {
	r := &fakeRunner{intervals: 2}
	addr, log := agentFor(t, false, r, nil)
	c, k, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	own, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	m := &relay{agent: addr, tlsCfg: ServerTLS(own)}
	_, err = (&Controller{Agents: []string{m.start(t)}, Token: token, Plan: PlanRequest{Source: "x"}}).Run(context.Background())
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("through a man in the middle: %v", err)
	}
	if !waitUntil(2*time.Second, func() bool { return strings.Contains(log.String(), "refused") }) || r.running.Load() != 0 {
		t.Errorf("agent log %q", log)
	}
}

// Plaintext against TLS, either way round: refused before anything else,
// each side saying what to change.
func TestTransportMismatch(t *testing.T) {
	tlsAgent, tlsLog := agentFor(t, false, &fakeRunner{}, nil)
	_, err := (&Controller{Agents: []string{tlsAgent}, Token: token, Insecure: true, Plan: PlanRequest{Source: "x"}}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the agent refused: this agent speaks TLS; do not give --agents-insecure") {
		t.Errorf("plaintext controller, TLS agent: %v", err)
	}
	if !waitUntil(2*time.Second, func() bool { return strings.Contains(tlsLog.String(), "a controller without TLS") }) {
		t.Errorf("TLS agent log: %s", tlsLog)
	}
	plainAgent, plainLog := agentFor(t, true, &fakeRunner{}, nil)
	_, err = (&Controller{Agents: []string{plainAgent}, Token: token, Plan: PlanRequest{Source: "x"}}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the agent serves without TLS (throng agent --insecure)") {
		t.Errorf("TLS controller, plaintext agent: %v", err)
	}
	if !waitUntil(2*time.Second, func() bool { return strings.Contains(plainLog.String(), "the peer speaks TLS") }) {
		t.Errorf("plaintext agent log: %s", plainLog)
	}
}

// A generated certificate is kept and reused (the same fingerprint at
// the next start), its key private to the user; a key that is a link or
// belongs to another user is refused.
func TestGeneratedCertificate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	a, created, err := LoadOrCreateCertificate(dir)
	if err != nil || !created {
		t.Fatalf("first start: created %v, %v", created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, GeneratedKey))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, %v", fi.Mode(), err)
	}
	b, created, err := LoadOrCreateCertificate(dir)
	if err != nil || created || Fingerprint(a.Certificate[0]) != Fingerprint(b.Certificate[0]) {
		t.Errorf("second start: created %v, %v, fingerprints differ: %v", created, err, Fingerprint(a.Certificate[0]) != Fingerprint(b.Certificate[0]))
	}
	// The pins file takes the certificate itself.
	pem, _ := os.ReadFile(filepath.Join(dir, GeneratedCert))
	if pins, err := ParsePins(pem); err != nil || len(pins) != 1 || pins[0] != Fingerprint(a.Certificate[0]) {
		t.Errorf("pins from the PEM: %v %v", pins, err)
	}
	// A key replaced by a link is refused.
	other := filepath.Join(t.TempDir(), "agent")
	os.MkdirAll(other, 0o700)
	os.Symlink(filepath.Join(dir, GeneratedKey), filepath.Join(other, GeneratedKey))
	if _, _, err := LoadOrCreateCertificate(other); err == nil || !strings.Contains(err.Error(), "not a regular file owned by this user") {
		t.Errorf("a linked key: %v", err)
	}
	if os.Getuid() == 0 {
		os.Chown(filepath.Join(dir, GeneratedKey), 65534, 65534)
		if _, _, err := LoadOrCreateCertificate(dir); err == nil || !strings.Contains(err.Error(), "not a regular file owned by this user") {
			t.Errorf("a key of another user: %v", err)
		}
	}
}

func TestParseFingerprints(t *testing.T) {
	const hex = "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"
	openssl := "sha256 Fingerprint=" + strings.ToUpper(strings.Join(func() []string {
		var p []string
		for i := 0; i < len(hex); i += 2 {
			p = append(p, hex[i:i+2])
		}
		return p
	}(), ":"))
	for _, in := range []string{"sha256:" + hex, hex, "SHA256:" + strings.ToUpper(hex), openssl} {
		if fp, err := ParseFingerprint(in); err != nil || fp != "sha256:"+hex {
			t.Errorf("%q: %q %v", in, fp, err)
		}
	}
	for _, in := range []string{"", "sha256:abc", "md5:" + hex, hex + "00"} {
		if _, err := ParseFingerprint(in); err == nil {
			t.Errorf("%q was taken", in)
		}
	}
	pins, err := ParsePins([]byte("# agents\nsha256:" + hex + " gen1\n\n" + hex + "\n"))
	if err != nil || len(pins) != 2 {
		t.Errorf("pins %v %v", pins, err)
	}
	if _, err := ParsePins([]byte("# nothing\n")); err == nil {
		t.Error("an empty pins file was taken")
	}
	if _, err := ParsePins([]byte("gen1 sha256:" + hex + "\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad line: %v", err)
	}
}

// A flood of refusals is not a flood of log lines: at most
// refusalsPerSecond a second, the rest counted into the next line.
func TestRefusalsLoggedAtABoundedRate(t *testing.T) {
	log := &syncBuffer{}
	s := &Server{Log: log}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	for range 20 {
		s.refused(addr, errors.New("junk"))
	}
	if n := strings.Count(log.String(), "refused 127.0.0.1:9: junk"); n != refusalsPerSecond {
		t.Errorf("%d lines logged in one second, want %d", n, refusalsPerSecond)
	}
	s.logMu.Lock()
	s.refusedAt = s.refusedAt.Add(-time.Second) // a second later
	s.logMu.Unlock()
	s.refused(addr, errors.New("junk"))
	if !strings.Contains(log.String(), "junk (and 15 more refusals not logged)") {
		t.Errorf("log:\n%s", log)
	}
}

// A TCP health check (Kubernetes' readinessProbe: connect, close before a
// byte) is counted, not logged as a refusal; a peer that does send bytes
// is still refused and logged.
func TestProbesAreNotRefusals(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s := &Server{}
			addr, log := agentFor(t, tr.insecure, &fakeRunner{}, s)
			for range 3 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			if !waitUntil(2*time.Second, func() bool { return s.probes.Load() == 3 }) {
				t.Fatalf("probes %d, want 3; log:\n%s", s.probes.Load(), log)
			}
			if strings.Contains(log.String(), "refused") {
				t.Errorf("a probe was logged as a refusal:\n%s", log)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
			c.Close()
			if !waitUntil(2*time.Second, func() bool { return strings.Contains(log.String(), "refused") }) {
				t.Errorf("junk was not refused:\n%s", log)
			}
			if s.probes.Load() != 3 {
				t.Errorf("junk counted as a probe")
			}
		})
	}
}
