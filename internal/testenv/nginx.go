package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NginxPaths are the places besides PATH where StartNginx and Nginx look for
// the nginx binary (PATH often lacks /usr/sbin).
var NginxPaths = []string{"/usr/sbin/nginx"}

const (
	// NginxReadyTimeout bounds how long StartNginx waits for one nginx
	// process to become ready (see StartNginx).
	NginxReadyTimeout = 10 * time.Second
	nginxPollInterval = 5 * time.Millisecond
	// A probe that gets no answer (e.g. from a foreign listener that never
	// answers) is abandoned after a timeout that starts short and doubles up
	// to the maximum, so a slow machine still gets its answer eventually.
	nginxProbeTimeoutMin = 50 * time.Millisecond
	nginxProbeTimeoutMax = 2 * time.Second
)

// NginxOptions configures StartNginx. The zero value is valid: one worker,
// long keep-alive, the default web root.
type NginxOptions struct {
	// Workers is worker_processes; 0 means 1.
	Workers int
	// KeepaliveRequests is keepalive_requests, the number of requests one
	// keep-alive connection may carry; 0 means 100000 (benchmarks pass
	// 100000000 so that nginx never closes a connection by itself).
	KeepaliveRequests int
	// KeepaliveTimeout is keepalive_timeout, how long an idle keep-alive
	// connection stays open; 0 means 300s. Rounded to milliseconds.
	KeepaliveTimeout time.Duration
	// Files are extra files for the web root, by relative slash-separated
	// path (e.g. "api/v1/items.json"); they may replace the default files.
	// Paths must stay inside the web root.
	Files map[string][]byte
	// HTTP2 adds two listeners (Server.TLSURL, Server.H2CURL): HTTPS with
	// HTTP/2 by ALPN, and HTTP/2 without TLS (prior knowledge).
	HTTP2 bool
	// Upstream, when set (host:port), is proxied under /shop/: the demo
	// shop of `throng serve web-shop` behind nginx, as an application
	// server behind its front end.
	Upstream string
	// Host is the address to listen on; "" means 127.0.0.1. Tests that put
	// nginx in a network namespace give the namespace's address (and start
	// the harness inside that namespace, so the readiness probe reaches it).
	Host string
}

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// StartNginx starts a private nginx on 127.0.0.1 and blocks until it is ready,
// or until it failed, NginxReadyTimeout passed or ctx was done. ctx governs the
// start only, not the life of the server: stop it with Server.Stop.
//
// The server gets a fresh directory under os.TempDir() (Server.Dir, mode 0755
// because workers started by root run as nobody) holding nginx.conf, error.log,
// nginx.out (nginx's stdout and stderr), the pid file, the five *_temp_path
// directories and the web root www/, which contains:
//
//   - one.html: exactly 1 byte, "x" (the path the scenario presets request);
//   - size/4096: 4096 bytes;
//   - opts.Files;
//   - a readiness file with a random per-start token.
//
// The configuration runs nginx in the foreground (daemon off, master_process
// on) with access_log off, keepalive settings from opts, worker_connections
// 4096, listen 127.0.0.1:PORT on a port free at start time, and
// "location = /nginx_status { stub_status; }". The server is ready when a GET
// of the token file returns exactly the token while the nginx master started
// here is still running. If the port turns out to be taken ("Address already
// in use"), StartNginx retries with another port, up to 5 ports in all.
//
// On failure everything started is stopped and removed, and the error includes
// the end of nginx's log. The binary is found with FindBinary("nginx",
// NginxPaths...).
func StartNginx(ctx context.Context, opts NginxOptions) (*Server, error) {
	return startNginx(ctx, opts, FreePort)
}

// nginxSpec is nginx's: SIGQUIT (its graceful stop) ends it.
var nginxSpec = spec{name: "nginx", bin: "nginx", paths: NginxPaths, ready: NginxReadyTimeout, poll: nginxPollInterval,
	stop: syscall.SIGQUIT, inUse: []string{"Address already in use"}}

// startNginx is StartNginx with the port source as a parameter (for tests).
func startNginx(ctx context.Context, opts NginxOptions, nextPort func() (int, error)) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var tlsAddr, h2cAddr string
	s, err := nginxSpec.start(ctx, 0, nextPort, func(_ context.Context, _, dir string, port int) (launch, error) {
		l, tls, h2c, err := nginxConfigure(dir, port, opts)
		tlsAddr, h2cAddr = tls, h2c
		return l, err
	})
	if err != nil {
		return nil, err
	}
	if opts.HTTP2 {
		s.TLSURL, s.H2CURL, s.CAFile = "https://"+tlsAddr, "http://"+h2cAddr, filepath.Join(s.Dir, "cert.pem")
	}
	return s, nil
}

// withDefaults checks o and fills in its defaults.
func (o NginxOptions) withDefaults() (NginxOptions, error) {
	switch {
	case o.Workers < 0:
		return o, fmt.Errorf("testenv: nginx: Workers %d < 0", o.Workers)
	case o.KeepaliveRequests < 0:
		return o, fmt.Errorf("testenv: nginx: KeepaliveRequests %d < 0", o.KeepaliveRequests)
	case o.KeepaliveTimeout < 0:
		return o, fmt.Errorf("testenv: nginx: KeepaliveTimeout %v < 0", o.KeepaliveTimeout)
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.KeepaliveRequests == 0 {
		o.KeepaliveRequests = 100000
	}
	if o.KeepaliveTimeout == 0 {
		o.KeepaliveTimeout = 300 * time.Second
	}
	for name := range o.Files {
		if !filepath.IsLocal(filepath.FromSlash(name)) || strings.HasSuffix(name, "/") {
			return o, fmt.Errorf("testenv: nginx: file %q is not a relative path inside the web root", name)
		}
	}
	return o, nil
}

// nginxConfigure writes the web root (with the readiness token) and
// nginx.conf into dir; with opts.HTTP2, also the certificate, and it
// returns the TLS and h2c listeners' addresses.
func nginxConfigure(dir string, port int, opts NginxOptions) (l launch, tlsAddr, h2cAddr string, err error) {
	if strings.ContainsAny(dir, "\"'\\$;{} \t\n") {
		return l, "", "", fmt.Errorf("temporary directory %q has characters nginx.conf cannot take; set TMPDIR", dir)
	}

	// The readiness file: its name and content are a random per-start
	// token, so only this very nginx can serve it.
	tokenBytes := make([]byte, 16)
	rand.Read(tokenBytes)
	token := hex.EncodeToString(tokenBytes)
	tokenFile := "throng-ready-" + token + ".txt"
	files := map[string][]byte{
		"one.html":  []byte("x"),
		"size/4096": bytes.Repeat([]byte("0123456789abcdef"), 4096/16),
	}
	for name, data := range opts.Files {
		files[name] = data
	}
	files[tokenFile] = []byte(token)
	www := filepath.Join(dir, "www")
	if err := writeWebRoot(www, files); err != nil {
		return l, "", "", err
	}

	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if opts.HTTP2 {
		p1, err1 := FreePort()
		p2, err2 := FreePort()
		if err := errors.Join(err1, err2); err != nil {
			return l, "", "", err
		}
		tlsAddr, h2cAddr = net.JoinHostPort(host, strconv.Itoa(p1)), net.JoinHostPort(host, strconv.Itoa(p2))
		_, certPEM, keyPEM, err := SelfSigned()
		if err != nil {
			return l, "", "", err
		}
		if err := errors.Join(os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o644), os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600)); err != nil {
			return l, "", "", err
		}
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, addr, opts)+nginxExtra(dir, addr, tlsAddr, h2cAddr, opts)), 0o644); err != nil {
		return l, "", "", err
	}
	errorLog := filepath.Join(dir, "error.log")
	return launch{args: []string{"-e", errorLog, "-p", dir + "/", "-c", conf}, out: filepath.Join(dir, "nginx.out"), errorLog: errorLog,
		addr: addr, url: "http://" + addr, probe: nginxProbe(dir, "http://"+addr+"/"+tokenFile, token, errorLog)}, tlsAddr, h2cAddr, nil
}

// nginxProbe GETs url until it returns exactly token. A probe that gets
// no answer (a foreign listener that never answers) is abandoned after a
// timeout that starts short and doubles; a 403 with "Permission denied" in
// the error log is fatal: the workers cannot read the web root in dir.
func nginxProbe(dir, url, token, errorLog string) func(context.Context) error {
	client := probeClient()
	timeout := nginxProbeTimeoutMin
	return func(ctx context.Context) error {
		status, body, err := probe(ctx, client, url, timeout)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			err = fmt.Errorf("no answer within %v", timeout)
			timeout = min(2*timeout, nginxProbeTimeoutMax)
			return err
		case err != nil:
			return err
		case status == http.StatusOK && body == token:
			return nil
		case status == http.StatusForbidden && logContains(errorLog, "(13: Permission denied)"):
			return probeFatal{fmt.Errorf("readiness probe got 403 Forbidden: the worker user cannot read the web root; "+
				"every parent directory of %s must be traversable (check TMPDIR)", dir)}
		}
		return fmt.Errorf("readiness probe got status %d, body %.40q (another server on this port?)", status, body)
	}
}

// logContains reports whether the file at path contains s.
func logContains(path, s string) bool {
	b, _ := os.ReadFile(path)
	return bytes.Contains(b, []byte(s))
}

// probe GETs url and returns the status and (at most 64 bytes of) the body.
func probe(ctx context.Context, client *http.Client, url string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	return resp.StatusCode, string(b), err
}

// writeWebRoot writes files under root and makes everything world-readable
// whatever the umask (nginx workers may run as nobody).
func writeWebRoot(root string, files map[string][]byte) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
}

// nginxConfig renders the private nginx.conf for a server in dir on addr.
func nginxConfig(dir, addr string, o NginxOptions) string {
	p := func(name string) string { return filepath.Join(dir, name) }
	return fmt.Sprintf(`# private nginx config written by throng's internal/testenv; removed on Stop
daemon off;
master_process on;
worker_processes %d;
worker_shutdown_timeout 3s;
pid %s;
error_log %s warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    server_tokens off;
    keepalive_requests %d;
    keepalive_timeout %dms;
    types {
        text/html html;
        text/plain txt;
        application/json json;
    }
    default_type application/octet-stream;
    client_body_temp_path %s;
    proxy_temp_path %s;
    fastcgi_temp_path %s;
    uwsgi_temp_path %s;
    scgi_temp_path %s;
    server {
        listen %s;
        root %s;
        location = /nginx_status { stub_status; }
        include journeys.conf;
    }
`, o.Workers, p("nginx.pid"), p("error.log"), o.KeepaliveRequests, max(1, o.KeepaliveTimeout.Milliseconds()),
		p("client_body_temp"), p("proxy_temp"), p("fastcgi_temp"), p("uwsgi_temp"), p("scgi_temp"),
		addr, p("www"))
}

// nginxExtra closes the http block of nginx.conf with the listeners of
// NginxOptions.HTTP2, and writes journeys.conf, the locations every
// listener serves for the web journeys' tests:
//
//	/redirect/N          a chain of N redirects (302) ending at /one.html (N = 1..3)
//	/loop, /loop2        a redirect loop
//	/cookie/set          sets nginx_sid=abc123 (Path=/cookie, Max-Age=60)
//	/cookie/expire       expires it (Max-Age=0)
//	/cookie/elsewhere    sets scoped=1 for Path=/other only
//	/cookie/show         answers the Cookie header received: "cookie=[...]"
//	/chunked/NAME        the web root's NAME through SSI: chunked, no Content-Length
//	/close               "closed\n" with Connection: close (keepalive_timeout 0)
//	/notmodified         304, no body
//	/nocontent           204, no body
//	/shop/               NginxOptions.Upstream, proxied (when set)
func nginxExtra(dir, addr, tlsAddr, h2cAddr string, o NginxOptions) string {
	loc := `location = /redirect/3 { return 302 /redirect/2; }
location = /redirect/2 { return 302 /redirect/1; }
location = /redirect/1 { return 302 /one.html; }
location = /loop { return 302 /loop2; }
location = /loop2 { return 302 /loop; }
location = /cookie/set { add_header Set-Cookie "nginx_sid=abc123; Path=/cookie; Max-Age=60" always; default_type text/plain; return 200 "set\n"; }
location = /cookie/expire { add_header Set-Cookie "nginx_sid=gone; Path=/cookie; Max-Age=0" always; default_type text/plain; return 200 "expired\n"; }
location = /cookie/elsewhere { add_header Set-Cookie "scoped=1; Path=/other" always; default_type text/plain; return 200 "scoped\n"; }
location = /cookie/show { default_type text/plain; return 200 "cookie=[$http_cookie]\n"; }
location = /close { keepalive_timeout 0; default_type text/plain; return 200 "closed\n"; }
location = /notmodified { return 304; }
location = /nocontent { return 204; }
`
	loc += fmt.Sprintf("location /chunked/ { ssi on; ssi_types *; alias %s/; }\n", filepath.Join(dir, "www"))
	if o.Upstream != "" {
		loc += fmt.Sprintf("location /shop/ { proxy_pass http://%s; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_set_header Host $http_host; }\n", o.Upstream)
	}
	os.WriteFile(filepath.Join(dir, "journeys.conf"), []byte(loc), 0o644)
	var b strings.Builder
	if tlsAddr != "" {
		// nginx 1.22 writes HTTP/2 in listen; HTTP/1.1 stays on the TLS port
		// for clients that do not offer h2.
		fmt.Fprintf(&b, `    server {
        listen %s ssl http2;
        ssl_certificate %s;
        ssl_certificate_key %s;
        root %s;
        include journeys.conf;
    }
    server {
        listen %s http2;
        root %s;
        include journeys.conf;
    }
`, tlsAddr, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "www"), h2cAddr, filepath.Join(dir, "www"))
	}
	b.WriteString("}\n")
	return b.String()
}
