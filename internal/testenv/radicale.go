package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	if opts.MaxConnections < 0 {
		return nil, fmt.Errorf("testenv: radicale: MaxConnections %d < 0", opts.MaxConnections)
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = 256
	}
	if err := accounts("radicale", &opts.Users, &opts.Password); err != nil {
		return nil, err
	}
	s, err := radicaleSpec.start(ctx, 0, nil, func(_ context.Context, _, dir string, port int) (launch, error) {
		return radicaleConfigure(dir, port, opts)
	})
	if err != nil {
		return nil, err
	}
	return &RadicaleServer{Server: s, Password: opts.Password, Users: opts.Users}, nil
}

// radicaleSpec is Debian's radicale.
var radicaleSpec = spec{name: "radicale", bin: "radicale", paths: RadicalePaths,
	ready: RadicaleReadyTimeout, poll: 10 * time.Millisecond, inUse: []string{"Address already in use"}}

// radicaleConfigure writes radicale's configuration and its users
// (opts.Users, all with opts.Password) into dir.
func radicaleConfigure(dir string, port int, opts RadicaleOptions) (launch, error) {
	var users strings.Builder
	for n := 1; n <= opts.Users; n++ {
		fmt.Fprintf(&users, "%s:%s\n", UserName(n), opts.Password)
	}
	if err := os.WriteFile(filepath.Join(dir, "users"), []byte(users.String()), 0o600); err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(opts.Password+"\n"), 0o600); err != nil {
		return launch{}, err
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
		return launch{}, err
	}
	url := "http://" + addr
	client := probeClient()
	client.Timeout = 2 * time.Second
	return launch{args: []string{"--config", conf}, addr: addr, url: url, probe: func(ctx context.Context) error {
		// The first user's collection, with its password: only this start
		// knows it.
		req, _ := http.NewRequestWithContext(ctx, "PROPFIND", url+"/"+UserName(1)+"/", nil)
		req.SetBasicAuth(UserName(1), opts.Password)
		req.Header.Set("Depth", "0")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMultiStatus {
			return fmt.Errorf("PROPFIND answered %s (another server on this port?)", resp.Status)
		}
		return nil
	}}, nil
}

// Radicale starts a private Radicale for the test and registers t.Cleanup
// to stop it; it skips or fails as RequireBinary does without radicale.
func Radicale(t testing.TB, opts RadicaleOptions) *RadicaleServer {
	t.Helper()
	return started(t, &radicaleSpec, func(ctx context.Context) (*RadicaleServer, error) { return StartRadicale(ctx, opts) })
}
