package files

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// These tests run against a private Samba smbd (internal/testenv): they
// skip when it is not installed, and fail instead when CI is set.

// samba starts a private smbd and sets SMB_PASSWORD for the test.
func samba(t *testing.T, opts testenv.SambaOptions) *testenv.SambaServer {
	t.Helper()
	srv := testenv.Samba(t, opts)
	t.Setenv("SMB_PASSWORD", srv.Password)
	return srv
}

func TestSMBCopyDown(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/seed/002", 2, "  population: {files: 300}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	var total int64
	for u := range 2 {
		in, _, errs := do(t, open(t, c, u, 2), acts[0], 150)
		if len(errs) > 0 {
			t.Fatalf("user %d: %v", u, errs)
		}
		total += in
	}
	if total != 300*20488 {
		t.Errorf("copied %d bytes", total)
	}
	// The files are on the server's disk, written by the share's user.
	fi, err := os.Stat(filepath.Join(srv.ShareDir, "seed", "002", "f00000299.bin"))
	if err != nil || fi.Size() != 20488 {
		t.Fatalf("on the server: %v", err)
	}
	d := c.Describe()
	if d["negotiated_dialect"] != "3.1.1" || d["encrypted"] != "false" || d["protocol"] != "smb" {
		t.Errorf("Describe %v", d)
	}
	// The connections are closed when the users leave.
	c.mu.Lock()
	n := len(c.slots)
	c.mu.Unlock()
	if n != 2 {
		t.Errorf("%d connections open while 2 users are", n)
	}
}

// Each dialect the library offers can be pinned; the negotiated one is
// recorded. signing: required signs every message.
func TestSMBDialectsAndSigning(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	for _, d := range []string{"2.0.2", "2.1", "3.0", "3.0.2", "3.1.1"} {
		for _, signing := range []string{"auto", "required"} {
			c, acts := decode(t, srv.URL+"/d", "  dialect: \""+d+"\"\n  signing: "+signing+"\n  population: {files: 5}\n  reuse: true\n", "{op: copy-down}")
			if err := c.Preflight(context.Background()); err != nil {
				t.Fatalf("dialect %s signing %s: %v", d, signing, err)
			}
			if err := c.Prepare(context.Background(), population(1)); err != nil {
				t.Fatal(err)
			}
			if _, _, errs := do(t, open(t, c, 0, 1), acts[0], 5); len(errs) > 0 {
				t.Fatalf("dialect %s: %v", d, errs)
			}
			got := c.Describe()
			if got["negotiated_dialect"] != d || (signing == "required") != (got["signed"] == "true") {
				t.Errorf("dialect %s signing %s: negotiated %s signed %s", d, signing, got["negotiated_dialect"], got["signed"])
			}
		}
	}
}

func TestSMBEncryption(t *testing.T) {
	enc := samba(t, testenv.SambaOptions{Encrypt: "required"})
	c, acts := prepared(t, enc.URL+"/e", 1, "  encryption: required\n  population: {files: 20}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, errs := do(t, open(t, c, 0, 1), acts[0], 20); len(errs) > 0 {
		t.Fatal(errs)
	}
	if d := c.Describe(); d["encrypted"] != "true" {
		t.Errorf("Describe %v", d)
	}
	// encryption: required against a server that does not encrypt.
	plain := samba(t, testenv.SambaOptions{})
	c2, _ := decode(t, plain.URL+"/e", "  encryption: required\n  population: {files: 20}\n", "{op: copy-down}")
	err := c2.Preflight(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the server did not encrypt the session") {
		t.Errorf("Preflight: %v", err)
	}
	// A dialect without encryption against a server that requires it.
	t.Setenv("SMB_PASSWORD", enc.Password)
	c3, _ := decode(t, enc.URL+"/e", "  dialect: \"2.1\"\n  population: {files: 20}\n", "{op: copy-down}")
	if err := c3.Preflight(context.Background()); err == nil {
		t.Error("SMB 2.1 against smb encrypt = required: no error")
	}
}

// Bad input gives one clear message, of the right class, and never the
// password.
func TestSMBBadLogOn(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	t.Setenv("SMB_PASSWORD", "wrong-"+srv.Password[:4])
	c, acts := decode(t, srv.URL+"/x", "  population: {files: 3}\n", "{op: copy-down}")
	err := c.Preflight(context.Background())
	if err == nil || !strings.Contains(err.Error(), `the server refused user "throng" with this password (STATUS_LOGON_FAILURE (0xC000006D); the password is read from ${SMB_PASSWORD})`) ||
		strings.Contains(err.Error(), srv.Password[:4]) {
		t.Errorf("wrong password: %v", err)
	}
	c.layout = newLayout(1, &c.Population)
	_, err = open(t, c, 0, 1).Do(context.Background(), acts[0])
	if driver.Classify(err) != driver.Auth {
		t.Errorf("Do with a wrong password: %v (class %v)", err, driver.Classify(err))
	}

	t.Setenv("SMB_PASSWORD", srv.Password)
	c, _ = decode(t, strings.Replace(srv.URL, "/share", "/nosuchshare", 1)+"/x", "  population: {files: 3}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), `the server has no share "nosuchshare" (STATUS_BAD_NETWORK_NAME`) {
		t.Errorf("no such share: %v", err)
	}
	c, _ = decode(t, strings.Replace(srv.URL, "throng@", "nobody@", 1)+"/x", "  population: {files: 3}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), `the server refused user "nobody"`) {
		t.Errorf("unknown user: %v", err)
	}
	os.WriteFile(filepath.Join(srv.ShareDir, "afile"), nil, 0o644)
	c, _ = decode(t, srv.URL+"/afile", "  population: {files: 3}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "afile is a file, not a directory") {
		t.Errorf("a file as the directory: %v", err)
	}
	// Nothing listens: a dial error at once.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	c, _ = decode(t, "smb://throng@"+addr+"/share", "  population: {files: 3}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "connect "+addr+": connection refused") {
		t.Errorf("nothing listening: %v", err)
	}
}

// Each user's connection (connect, negotiate, session setup, tree
// connect) is the event "connect": one per connection made, timed from
// before the action that needed it, and a refused log-on is one of class
// auth with the server's status; the family's default threshold fails a
// run with any.
func TestSMBConnectIsTimed(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/c", 2, "  population: {files: 20}\n", "{op: copy-down}")
	if ev := c.EventActions(); len(ev) != 1 || ev[0] != EventConnect {
		t.Fatalf("events %v", ev)
	}
	sink := &eventSink{}
	c.Observe(&connectOnly{sink})
	for u := range 2 {
		before := time.Now()
		if _, _, errs := do(t, open(t, c, u, 2), acts[0], 10); len(errs) > 0 {
			t.Fatal(errs)
		}
		if n := len(sink.connects); n != u+1 {
			t.Fatalf("user %d: %d connect events after its 10 copies, want %d", u, n, u+1)
		}
		e := sink.connects[u]
		if e.class != driver.OK || e.latency <= 0 || e.cause.Before(before) || time.Since(e.cause) < e.latency {
			t.Errorf("user %d: connect %+v", u, e)
		}
	}
	if d := c.DefaultThresholds(); !slices.Contains(d, "all: connect.errors == 0") {
		t.Errorf("default thresholds %v", d)
	}

	t.Setenv("SMB_PASSWORD", "wrong-"+srv.Password[:4])
	c, acts = decode(t, srv.URL+"/c", "  population: {files: 3}\n", "{op: copy-down}")
	c.layout = newLayout(1, &c.Population)
	sink = &eventSink{}
	c.Observe(&connectOnly{sink})
	if _, err := open(t, c, 0, 1).Do(context.Background(), acts[0]); driver.Classify(err) != driver.Auth {
		t.Errorf("Do with a wrong password: %v", err)
	}
	if len(sink.connects) != 1 || sink.connects[0].class != driver.Auth || !strings.Contains(sink.connects[0].err.Error(), "STATUS_LOGON_FAILURE") {
		t.Errorf("wrong password: connect events %+v", sink.connects)
	}
}

// connectOnly gives a sink the "connect" events under index 1, whatever
// the config's other events.
type connectOnly struct{ s *eventSink }

func (c *connectOnly) Event(event int, cause time.Time, latency time.Duration, in, out int64, class driver.Class, err error) {
	c.s.Event(1, cause, latency, in, out, class, err)
}

// A server that accepts connections but never answers: the timeout, not a
// hang.
func TestSMBTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	t.Setenv("SMB_PASSWORD", "x")
	c, _ := decode(t, "smb://u@"+l.Addr().String()+"/share", "  timeout: 300ms\n  population: {files: 3}\n", "{op: copy-down}")
	start := time.Now()
	err = c.Preflight(context.Background())
	if driver.Classify(err) != driver.Timeout || time.Since(start) > 3*time.Second {
		t.Errorf("Preflight against a silent server: %v (class %v) after %v", err, driver.Classify(err), time.Since(start))
	}
}

// The server restarts in the middle of a copy: the files in flight fail
// (counted), the session connects again, the copy goes on to the end.
func TestSMBServerRestart(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/r", 1, "  population: {files: 400}\n  reconnect: 10s\n", "{op: copy-down}")
	s := open(t, c, 0, 1)
	if _, _, errs := do(t, s, acts[0], 100); len(errs) > 0 {
		t.Fatal(errs)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Restart(context.Background(), 300*time.Millisecond) }()
	failed := map[driver.Class]int{}
	var msgs []string
	ok := 0
	for range 300 {
		out, err := s.Do(context.Background(), acts[0])
		if err != nil {
			failed[driver.Classify(err)]++
			msgs = append(msgs, err.Error())
			continue
		}
		if out.BytesIn == 20488 {
			ok++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range failed {
		n += k
	}
	t.Logf("restart: %d ok, failed %v: %q", ok, failed, msgs)
	if ok+n != 300 || n > 3 || ok < 297 || failed[driver.Corrupt] > 0 {
		t.Errorf("after a restart: %d ok, failed %v %q", ok, failed, msgs)
	}
}

// A file removed on the server during the run, or changed there: counted,
// and the copy goes on.
func TestSMBRemovedAndChanged(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/m", 1, "  population: {files: 10}\n", "{op: copy-down}")
	dir := filepath.Join(srv.ShareDir, "m")
	os.Remove(filepath.Join(dir, "f00000003.bin"))
	b, _ := os.ReadFile(filepath.Join(dir, "f00000005.bin"))
	b[7] ^= 0xFF
	os.WriteFile(filepath.Join(dir, "f00000005.bin"), b, 0o644)
	_, _, errs := do(t, open(t, c, 0, 1), acts[0], 10)
	if len(errs[driver.Status4xx]) != 1 || len(errs[driver.Corrupt]) != 1 || len(errs) != 2 {
		t.Fatalf("errors %v", errs)
	}
	if got := errs[driver.Status4xx][0].Error(); got != "copy f00000003.bin: not found (removed during the run?)" {
		t.Errorf("removed: %q", got)
	}
	if got := errs[driver.Corrupt][0].Error(); got != "copy f00000005.bin: byte 7 differs from what was written" {
		t.Errorf("changed: %q", got)
	}
}

// Users share connections (parallel streams over one connection), and a
// per-user population in a tree, with every op over SMB.
func TestSMBSharedConnectionAndOps(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/ops", 4, "  connections: 1\n  population: {files: 12, per_user: true, tree: {depth: 2, width: 2}}\n",
		"{op: copy-down}", "{op: walk}", "{op: stat}", "{op: read, bytes: 1000}", "{op: write}", "{op: rename}", "{op: open}",
		"{op: copy-up}", "{op: delete, from: uploads}", "{op: scan, bytes: 10}")
	var wg sync.WaitGroup
	errc := make(chan error, 4*len(acts))
	for u := range 4 {
		s := open(t, c, u, 4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				for _, a := range acts {
					if _, err := s.Do(context.Background(), a); err != nil {
						errc <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	c.mu.Lock()
	if len(c.slots) != 1 {
		t.Errorf("%d connections for 4 users with connections: 1", len(c.slots))
	}
	c.mu.Unlock()
	if ups, _ := os.ReadDir(filepath.Join(srv.ShareDir, "ops", uploadsDir, "u0002")); len(ups) != 0 {
		t.Errorf("uploads left: %d (each was deleted)", len(ups))
	}
	// Reuse over SMB: nothing to write again.
	c.Reuse = true
	if err := c.Prepare(context.Background(), population(4)); err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(context.Background(), population(4)); err != nil || lastWritten(t, c) != 0 {
		t.Errorf("reused Prepare: %v, %d written", err, lastWritten(t, c))
	}
}

// With no reconnect wait, actions fail at once while the server is down:
// each failure is counted against its file and the sweep goes on.
func TestSMBServerDownCountsFiles(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{})
	c, acts := prepared(t, srv.URL+"/down", 1, "  population: {files: 100}\n  reconnect: 0s\n", "{op: copy-down}")
	s := open(t, c, 0, 1)
	if _, _, errs := do(t, s, acts[0], 20); len(errs) > 0 {
		t.Fatal(errs)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Restart(context.Background(), 600*time.Millisecond) }()
	time.Sleep(100 * time.Millisecond)
	ok, failed, tries := 0, map[driver.Class]int{}, 0
	try := func() {
		tries++
		if _, err := s.Do(context.Background(), acts[0]); err != nil {
			failed[driver.Classify(err)]++
		} else {
			ok++
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 60 {
		try()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// On a loaded machine Samba may take longer than those 60 tries to
	// come back: go on (boundedly) until one action succeeds after it.
	for deadline := time.Now().Add(10 * time.Second); ok == 0 && time.Now().Before(deadline); {
		try()
	}
	if failed[driver.Dial] == 0 || ok == 0 || ok+failed[driver.Dial]+failed[driver.IO] != tries {
		t.Errorf("while the server was down: %d ok, failed %v of %d", ok, failed, tries)
	}
	if got := s.(*session).cursors[0]; got != 20+tries {
		t.Errorf("the sweep is at file %d after %d actions", got, 20+tries)
	}
}

// Samba's "server smb encrypt = desired" asks for encryption on an SMB 2.x
// session too (the session flag), which the library cannot do: it used to
// panic (a nil cipher in session.encrypt) during Mount. throng refuses
// the session with a message that says what to change; a dialect that can
// encrypt does, and auto negotiates one.
func TestSMBEncryptionDesiredOnSMB2(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{Encrypt: "desired"})
	for _, d := range []string{"2.0.2", "2.1"} {
		c, acts := decode(t, srv.URL+"/e", "  dialect: \""+d+"\"\n  population: {files: 2}\n", "{op: copy-down}")
		err := c.Preflight(context.Background())
		if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "the server asks that the session be encrypted") ||
			!strings.Contains(err.Error(), "the dialect it negotiated, "+d+", has no encryption") {
			t.Errorf("dialect %s: Preflight: %v (class %v)", d, err, driver.Classify(err))
		}
		// An action (which connects on its own) fails the same way.
		c.layout = newLayout(1, &c.Population)
		_, err = open(t, c, 0, 1).Do(context.Background(), acts[0])
		if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "has no encryption") {
			t.Errorf("dialect %s: Do: %v (class %v)", d, err, driver.Classify(err))
		}
	}
	for _, d := range []string{"auto", "3.0", "3.1.1"} {
		c, acts := decode(t, srv.URL+"/e", "  dialect: \""+d+"\"\n  population: {files: 2}\n", "{op: copy-down}")
		if err := c.Preflight(context.Background()); err != nil {
			t.Fatalf("dialect %s: %v", d, err)
		}
		if err := c.Prepare(context.Background(), population(1)); err != nil {
			t.Fatal(err)
		}
		if _, _, errs := do(t, open(t, c, 0, 1), acts[0], 2); len(errs) > 0 {
			t.Errorf("dialect %s: %v", d, errs)
		}
		if got := c.Describe()["encrypted"]; got != "true" {
			t.Errorf("dialect %s: encrypted %s", d, got)
		}
	}
}

// Without throng's own check, the same session makes the library panic:
// contained at the boundary, it is an error of class protocol that says
// so, and the process goes on.
func TestSMBLibraryPanicContained(t *testing.T) {
	srv := samba(t, testenv.SambaOptions{Encrypt: "desired"})
	refuseUnencryptable = false
	t.Cleanup(func() { refuseUnencryptable = true })
	c, acts := decode(t, srv.URL+"/e", "  dialect: \"2.0.2\"\n  population: {files: 2}\n", "{op: copy-down}")
	err := c.Preflight(context.Background())
	if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "mount share share: the SMB library failed (runtime error: invalid memory address or nil pointer dereference)") {
		t.Errorf("Preflight: %v (class %v)", err, driver.Classify(err))
	}
	c.layout = newLayout(1, &c.Population)
	_, err = open(t, c, 0, 1).Do(context.Background(), acts[0])
	if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "the SMB library failed") {
		t.Errorf("Do: %v (class %v)", err, driver.Classify(err))
	}
}
