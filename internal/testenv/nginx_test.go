package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run the real nginx; they skip when it is not installed (and
// fail instead when CI is set, see RequireBinary).

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, body
}

func TestNginxServesOneHTML(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{})
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") || s.URL != "http://"+s.Addr {
		t.Fatalf("Addr %q, URL %q", s.Addr, s.URL)
	}
	if !s.Alive() || s.PID <= 0 {
		t.Fatalf("Alive %v, PID %d", s.Alive(), s.PID)
	}
	resp, body := get(t, s.URL+"/one.html")
	if resp.StatusCode != http.StatusOK || string(body) != "x" {
		t.Fatalf("GET /one.html: %s, body %q", resp.Status, body)
	}
	if resp.ContentLength != 1 || resp.Header.Get("Content-Length") != "1" {
		t.Fatalf("GET /one.html: Content-Length %d (header %q), want 1", resp.ContentLength, resp.Header.Get("Content-Length"))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html" {
		t.Errorf("GET /one.html: Content-Type %q, want text/html", ct)
	}
	resp, body = get(t, s.URL+"/size/4096")
	if resp.StatusCode != http.StatusOK || len(body) != 4096 {
		t.Fatalf("GET /size/4096: %s, %d bytes", resp.Status, len(body))
	}
	resp, _ = get(t, s.URL+"/missing")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /missing: %s, want 404", resp.Status)
	}
}

func TestNginxStatus(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{})
	resp, body := get(t, s.URL+"/nginx_status")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "Active connections:") ||
		!strings.Contains(string(body), "server accepts handled requests") {
		t.Fatalf("GET /nginx_status: %s, body %q", resp.Status, body)
	}
}

func TestNginxConfig(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{Workers: 2})
	conf, err := os.ReadFile(filepath.Join(s.Dir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"daemon off;", "master_process on;", "worker_processes 2;", "access_log off;",
		"keepalive_requests 100000;", "keepalive_timeout 300000ms;", "worker_connections 4096;",
		"listen " + s.Addr + ";", "location = /nginx_status { stub_status; }",
		"pid " + filepath.Join(s.Dir, "nginx.pid") + ";",
		"error_log " + filepath.Join(s.Dir, "error.log") + " warn;",
		"client_body_temp_path " + s.Dir, "proxy_temp_path " + s.Dir, "fastcgi_temp_path " + s.Dir,
		"uwsgi_temp_path " + s.Dir, "scgi_temp_path " + s.Dir,
	} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	if fi, err := os.Stat(s.Dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("Dir %s: %v, mode %v; want 0755", s.Dir, err, fi.Mode().Perm())
	}
	if got := len(childPIDs(t, s.PID)); got != 2 {
		t.Errorf("nginx master %d has %d children, want 2 workers", s.PID, got)
	}
}

func TestNginxFiles(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{Files: map[string][]byte{
		"api/v1/items.json": []byte(`{"items":[]}`),
		"one.html":          []byte("y"), // Files may replace the defaults
	}})
	resp, body := get(t, s.URL+"/api/v1/items.json")
	if resp.StatusCode != http.StatusOK || string(body) != `{"items":[]}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/items.json: %s, %s, body %q", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if _, body := get(t, s.URL+"/one.html"); string(body) != "y" {
		t.Fatalf("GET /one.html: body %q, want the replacement %q", body, "y")
	}
}

func TestNginxRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []NginxOptions{
		{Files: map[string][]byte{"../escape": nil}},
		{Files: map[string][]byte{"/abs": nil}},
		{Workers: -1},
		{KeepaliveRequests: -1},
		{KeepaliveTimeout: -time.Second},
	} {
		if s, err := StartNginx(context.Background(), o); err == nil {
			s.Stop()
			t.Errorf("StartNginx(%+v) succeeded, want an error", o)
		}
	}
}

func TestNginxTwoServersAtOnce(t *testing.T) {
	t.Parallel()
	a := Nginx(t, NginxOptions{})
	b := Nginx(t, NginxOptions{})
	if a.Addr == b.Addr || a.PID == b.PID || a.Dir == b.Dir {
		t.Fatalf("two servers share something: %+v / %+v", a, b)
	}
	for _, s := range []*Server{a, b} {
		if resp, body := get(t, s.URL+"/one.html"); resp.StatusCode != http.StatusOK || string(body) != "x" {
			t.Fatalf("%s: GET /one.html: %s, body %q", s.Addr, resp.Status, body)
		}
	}
}

func TestNginxStopCleansUp(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{Workers: 2}) // its Cleanup calls Stop again: must be a no-op
	// The first worker may answer before the master has forked the second
	// (a loaded machine): wait for both, boundedly.
	workers := childPIDs(t, s.PID)
	for deadline := time.Now().Add(5 * time.Second); len(workers) != 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		workers = childPIDs(t, s.PID)
	}
	if len(workers) != 2 {
		t.Fatalf("want 2 workers, got %v", workers)
	}
	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(start))
	for _, pid := range append([]int{s.PID}, workers...) {
		// We reaped the master (and it its workers): not even a zombie may remain.
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			t.Errorf("pid %d still in /proc after Stop (err %v):\n%s", pid, err, status)
		}
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dir %s still exists after Stop (err %v)", s.Dir, err)
	}
	if s.Alive() {
		t.Error("Alive after Stop")
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", s.Addr)
	}
}

func TestNginxStopReportsEarlyExit(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "nginx", NginxPaths...)
	s, err := StartNginx(t.Context(), NginxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a crash of the master: SIGKILL it alone, leaving its worker.
	if err := s.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("exit not observed")
	}
	if s.Alive() {
		t.Fatal("Alive after the master was killed")
	}
	err = s.Stop()
	if err == nil || !strings.Contains(err.Error(), "had exited before Stop") {
		t.Fatalf("Stop after a crash: %v, want an error", err)
	}
	// The orphaned worker was in our process group and must be gone too.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n := processesInGroup(t, s.PID); n == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d processes left in group %d", n, s.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNginxKeepAlive(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{KeepaliveRequests: 100000})
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	const n = 2000
	for i := range n {
		if _, err := io.WriteString(c, "GET /one.html HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != "x" || resp.Close {
			t.Fatalf("response %d: %s, body %q, close %v, err %v", i, resp.Status, body, resp.Close, err)
		}
	}
}

func TestNginxKeepaliveRequestsLimit(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{KeepaliveRequests: 3})
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := 1; i <= 3; i++ {
		io.WriteString(c, "GET /one.html HTTP/1.1\r\nHost: bench\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if want := i == 3; resp.Close != want {
			t.Fatalf("response %d: Connection close %v, want %v", i, resp.Close, want)
		}
	}
}

// TestNginxPortTaken gives nginx a port held by a foreign HTTP server that
// answers everything with 200: the start must not take that server for nginx,
// must notice nginx's "Address already in use" and move to another port.
func TestNginxPortTaken(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "nginx", NginxPaths...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	foreign := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "not nginx")
	})}
	go foreign.Serve(l)
	defer foreign.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	calls := 0
	ports := func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return FreePort()
	}
	start := time.Now()
	s, err := startNginx(t.Context(), NginxOptions{}, ports)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	t.Logf("start with one taken port: %v, %d ports tried", time.Since(start), calls)
	if calls != 2 || s.Addr == l.Addr().String() {
		t.Fatalf("calls %d, Addr %s (taken: %d)", calls, s.Addr, taken)
	}
	if _, body := get(t, s.URL+"/one.html"); string(body) != "x" {
		t.Fatalf("body %q", body)
	}
}

// TestNginxAllPortsTaken is not parallel: it checks that a failed start leaves
// no process and no directory behind, in a private TMPDIR.
func TestNginxAllPortsTaken(t *testing.T) {
	RequireBinary(t, "nginx", NginxPaths...)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	start := time.Now()
	_, err = startNginx(t.Context(), NginxOptions{}, func() (int, error) { calls++; return taken, nil })
	if err == nil || !errors.Is(err, errAddrInUse) || !strings.Contains(err.Error(), "every port tried was taken") {
		t.Fatalf("all ports taken: err %v", err)
	}
	t.Logf("gave up after %v, %d ports tried: %v", time.Since(start), calls, err)
	if calls != portAttempts {
		t.Errorf("%d ports tried, want %d", calls, portAttempts)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
	if kids := childPIDs(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("child processes left: %v", kids)
	}
}

// TestNginxUnreadableWebRoot starts nginx under a TMPDIR whose parent is
// private (0700). As root the workers run as nobody and cannot read the web
// root: the start must fail fast with a hint. As non-root it just works.
func TestNginxUnreadableWebRoot(t *testing.T) {
	RequireBinary(t, "nginx", NginxPaths...)
	tmp := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	s, err := StartNginx(t.Context(), NginxOptions{})
	if os.Geteuid() != 0 {
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err == nil {
		s.Stop()
		t.Fatal("StartNginx succeeded with a web root nobody cannot reach")
	}
	if !strings.Contains(err.Error(), "traversable") || time.Since(start) > 5*time.Second {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	t.Logf("expected error after %v: %v", time.Since(start), err)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
}

func TestNginxStartExpiredContext(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "nginx", NginxPaths...)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s, err := StartNginx(ctx, NginxOptions{})
	if err == nil {
		s.Stop()
		t.Fatal("StartNginx with a canceled context succeeded")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// TestNginxStartFailureCleansUp makes nginx reject its config (port 0) and
// checks the error carries nginx's message and nothing is left behind.
func TestNginxStartFailureCleansUp(t *testing.T) {
	RequireBinary(t, "nginx", NginxPaths...)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	s, err := startNginx(t.Context(), NginxOptions{}, func() (int, error) { return 0, nil })
	if err == nil {
		s.Stop()
		t.Fatal("nginx started with listen 127.0.0.1:0")
	}
	if !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "[emerg]") {
		t.Fatalf("err %v; want the exit and nginx's [emerg] line", err)
	}
	t.Logf("expected error after %v: %v", time.Since(start), err)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
	if kids := childPIDs(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("child processes left: %v", kids)
	}
}

func TestRequireBinaryMissing(t *testing.T) {
	const name = "throng-no-such-binary-1b3f"
	for _, ci := range []string{"", "1"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			f := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() { defer close(done); RequireBinary(f, name, "/nonexistent/"+name) }()
			<-done
			if ci == "" && (!f.skipped || f.failed) {
				t.Errorf("CI unset: skipped %v, failed %v (%s); want a skip", f.skipped, f.failed, f.msg)
			}
			if ci != "" && (!f.failed || f.skipped || !strings.Contains(f.msg, name+" is not installed; .ci/run installs it")) {
				t.Errorf("CI set: skipped %v, failed %v (%s); want a failure", f.skipped, f.failed, f.msg)
			}
		})
	}
	if p := RequireBinary(t, "sh", "/bin/sh"); p == "" {
		t.Error("RequireBinary(sh) returned an empty path")
	}
}

// fakeTB records Skip and Fatal instead of acting on the real test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	var kids []int
	forEachProc(t, func(p, ppid, pgrp int, state string) {
		if ppid == pid {
			kids = append(kids, p)
		}
	})
	return kids
}

// processesInGroup counts the live (non-zombie) processes in process group
// pgid. Zombies are skipped: orphans are reaped by PID 1 whenever it likes.
func processesInGroup(t *testing.T, pgid int) int {
	t.Helper()
	n := 0
	forEachProc(t, func(p, ppid, pgrp int, state string) {
		if pgrp == pgid && state != "Z" {
			n++
		}
	})
	return n
}

func forEachProc(t *testing.T, f func(pid, ppid, pgrp int, state string)) {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		f(pid, ppid, pgrp, fields[0])
	}
}
