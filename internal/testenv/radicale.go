package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RadicalePaths are where StartRadicale looks for Debian's radicale besides
// PATH.
var RadicalePaths = []string{"/usr/bin/radicale"}

const (
	// RadicaleReadyTimeout bounds how long StartRadicale waits.
	RadicaleReadyTimeout = 15 * time.Second
)

// RadicaleOptions configures StartRadicale. The zero value is valid.
type RadicaleOptions struct {
	// Users is the number of accounts, user0001..userNNNN; 0 means 100.
	Users int
	// Password is every account's password; "" draws a random one.
	Password string
	// MaxConnections is the server's max_connections (default 256).
	MaxConnections int
}

// RadicaleServer is a running private Radicale (CalDAV/CardDAV) at URL.
type RadicaleServer struct {
	*Server
	Password string
	Users    int
}

// StartRadicale starts a private Radicale on 127.0.0.1 and blocks until it
// is ready, or until it failed, RadicaleReadyTimeout passed or ctx was
// done. Its configuration: only the given config is
// read (--config FILE), htpasswd with plain passwords, owner_only rights,
// filesystem storage under Dir/collections, no web UI, no delay after a
// failed log-on; Dir/password holds the password (mode 0600). Ready: a PROPFIND of user0001's home with this start's
// random password answers 207 while the process started here runs.
func StartRadicale(ctx context.Context, opts RadicaleOptions) (*RadicaleServer, error) {
	if opts.Users < 0 || opts.MaxConnections < 0 {
		return nil, errors.New("testenv: radicale: negative option")
	}
	if opts.Users == 0 {
		opts.Users = 100
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = 256
	}
	if strings.ContainsAny(opts.Password, ":\r\n") {
		return nil, errors.New("testenv: radicale: the password may not hold ':' or a line break")
	}
	if opts.Password == "" {
		b := make([]byte, 12)
		rand.Read(b)
		opts.Password = hex.EncodeToString(b)
	}
	bin, err := FindBinary("radicale", RadicalePaths...)
	if err != nil {
		return nil, err
	}
	return onFreePort("radicale", nil, func(port int) (*RadicaleServer, error) {
		return startRadicaleOnce(ctx, bin, opts, port)
	})
}

func startRadicaleOnce(ctx context.Context, bin string, opts RadicaleOptions, port int) (_ *RadicaleServer, err error) {
	dir, err := newPrivateDir("radicale")
	if err != nil {
		return nil, err
	}
	var proc *process
	defer func() {
		if err != nil {
			if proc != nil {
				proc.abort()
			}
			os.RemoveAll(dir)
		}
	}()
	var users strings.Builder
	for n := 1; n <= opts.Users; n++ {
		fmt.Fprintf(&users, "%s:%s\n", UserName(n), opts.Password)
	}
	if err := os.WriteFile(filepath.Join(dir, "users"), []byte(users.String()), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: radicale: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(opts.Password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: radicale: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf := filepath.Join(dir, "config")
	text := fmt.Sprintf(`# private radicale config written by throng's internal/testenv; removed on Stop
[server]
hosts = %s
max_connections = %d
ssl = False

[auth]
type = htpasswd
htpasswd_filename = %s
htpasswd_encryption = plain
delay = 0

[rights]
type = owner_only

[storage]
filesystem_folder = %s

[web]
type = none

[logging]
level = warning
mask_passwords = True
`, addr, opts.MaxConnections, filepath.Join(dir, "users"), filepath.Join(dir, "collections"))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: radicale: %w", err)
	}
	logPath := filepath.Join(dir, "radicale.log")
	proc, err = startProcess(dir, logPath, bin, "--config", conf)
	if err != nil {
		return nil, fmt.Errorf("testenv: radicale: starting %s: %w", bin, err)
	}
	url := "http://" + addr
	if err := waitRadicaleReady(ctx, proc, url, opts.Password, logPath); err != nil {
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("testenv: radicale: %s: %w", addr, err)
		}
		return nil, fmt.Errorf("testenv: radicale on %s (pid %d) did not become ready: %w%s", addr, proc.pid, err, logSuffix(logPath))
	}
	return &RadicaleServer{
		Server: &Server{Name: "radicale", Addr: addr, URL: url, Dir: dir, PID: proc.pid, ErrorLog: logPath,
			proc: proc, stopSignal: syscall.SIGTERM},
		Password: opts.Password, Users: opts.Users,
	}, nil
}

func waitRadicaleReady(ctx context.Context, proc *process, url, password, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, RadicaleReadyTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, "PROPFIND", url+"/"+UserName(1)+"/", nil)
		req.SetBasicAuth(UserName(1), password)
		req.Header.Set("Depth", "0")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusMultiStatus {
				select {
				case <-proc.done:
					last = errors.New("answered the probe, but the radicale started here has exited")
				default:
					return nil
				}
			} else {
				last = fmt.Errorf("PROPFIND answered %s (another server on this port?)", resp.Status)
			}
		} else {
			last = err
		}
		if logContains(logPath, "Address already in use") {
			return errAddrInUse
		}
		select {
		case <-proc.done:
			return fmt.Errorf("radicale exited during start (%s)", exitDesc(proc.waitErr))
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last probe: %v", context.Cause(ctx), last)
		case <-proc.done:
		case <-tick.C:
		}
	}
}

// Radicale starts a private Radicale for the test and registers t.Cleanup
// to stop it; it skips or fails as RequireBinary does without radicale.
func Radicale(t testing.TB, opts RadicaleOptions) *RadicaleServer {
	t.Helper()
	RequireBinary(t, "radicale", RadicalePaths...)
	r, err := StartRadicale(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("stopping radicale: %v", err)
		}
	})
	return r
}
