package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NATSServerPaths are the places besides PATH where StartNATSServer looks
// for Debian's nats-server.
var NATSServerPaths = []string{"/usr/sbin/nats-server", "/usr/bin/nats-server"}

// NATSServerOptions configures StartNATSServer. The zero value is an
// anonymous server with nats-server's limits.
type NATSServerOptions struct {
	// Username and Password, when set, are the one account the server
	// accepts.
	Username, Password string
	// MaxConnections is max_connections (0: 64,000).
	MaxConnections int
	// NoFile is the server's open-file limit (0: DefaultBrokerNoFile).
	NoFile int
	// Port to listen on (0: a free port, with retries when it is taken).
	Port int
	// MaxPending is max_pending, the bytes the server holds for a client
	// before it cuts it off as a slow consumer (0: the server's default);
	// below 1 MB it also lowers max_payload to it (the server's rule).
	MaxPending int
	// WriteDeadline is write_deadline, how long the server's write to a
	// client may block before it cuts it off as a slow consumer (0: the
	// server's default).
	WriteDeadline time.Duration
	// Monitor starts the HTTP monitoring endpoint on a free loopback port
	// (Server.MonitorURL).
	Monitor bool
}

// StartNATSServer starts a private nats-server (Debian's package) on
// 127.0.0.1 and blocks until it is ready, or until it failed,
// BrokerReadyTimeout passed or ctx was done. ctx governs the start only:
// stop it with Stop (SIGTERM, then SIGKILL to its process group).
//
// The server gets a fresh directory under os.TempDir() (Dir) holding
// nats.conf and nats.log (its stderr; ErrorLog), and a server_name holding
// a random per-start token. Addr is "127.0.0.1:PORT", URL "nats://"+Addr.
// It is ready when a client connecting to the port reads an INFO naming
// this very server (the token) while the process started here is still
// running; a port found taken is retried with another, 5 ports in all.
func StartNATSServer(ctx context.Context, opts NATSServerOptions) (*Broker, error) {
	return startBroker(ctx, opts.Port, func(ctx context.Context, port int) (*Server, error) {
		var monitorURL string
		s, err := natsSpec.start(ctx, port, nil, func(_ context.Context, _, dir string, port int) (launch, error) {
			l, murl, err := natsConfigure(dir, port, opts)
			monitorURL = murl
			return l, err
		})
		if s != nil {
			s.MonitorURL = monitorURL
		}
		return s, err
	})
}

// natsSpec is nats-server's: ready within BrokerReadyTimeout, the port
// taken when its log says so.
var natsSpec = spec{name: "nats-server", bin: "nats-server", paths: NATSServerPaths,
	ready: BrokerReadyTimeout, poll: brokerPollInterval, inUse: []string{"address already in use", "Error listening on port"}}

// natsConfigure writes nats.conf into dir; it returns the monitoring URL
// when opts asks for one.
func natsConfigure(dir string, port int, opts NATSServerOptions) (_ launch, monitorURL string, _ error) {
	tok := make([]byte, 8)
	rand.Read(tok)
	name := "throng_" + hex.EncodeToString(tok)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	maxConn := opts.MaxConnections
	if maxConn <= 0 {
		maxConn = 64000
	}
	maxPayload := 1 << 20
	if opts.MaxPending > 0 {
		maxPayload = min(maxPayload, opts.MaxPending)
	}
	conf := []string{
		"# private nats-server config: core NATS on loopback",
		"listen: " + addr,
		"server_name: " + name,
		"max_connections: " + strconv.Itoa(maxConn),
		"max_payload: " + strconv.Itoa(maxPayload),
		"logtime: true",
	}
	if opts.MaxPending > 0 {
		conf = append(conf, "max_pending: "+strconv.Itoa(opts.MaxPending))
	}
	if opts.WriteDeadline > 0 {
		conf = append(conf, "write_deadline: \""+opts.WriteDeadline.String()+"\"")
	}
	if opts.Monitor {
		mport, err := FreePort()
		if err != nil {
			return launch{}, "", fmt.Errorf("a monitoring port: %w", err)
		}
		conf = append(conf, "http: 127.0.0.1:"+strconv.Itoa(mport))
		monitorURL = "http://127.0.0.1:" + strconv.Itoa(mport)
	}
	if opts.Username != "" {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		conf = append(conf, "authorization {", "  user: "+q(opts.Username), "  password: "+q(opts.Password), "}")
	}
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return launch{}, "", err
	}
	return launch{args: []string{"-c", confPath}, out: filepath.Join(dir, "nats.log"), addr: addr, url: "nats://" + addr,
		noFile: noFile(opts.NoFile),
		probe: func(ctx context.Context) error {
			got, err := natsServerName(ctx, addr)
			if err == nil && got != name {
				err = fmt.Errorf("the server on %s is %q, not this start's %q (another server on this port?)", addr, got, name)
			}
			return err
		}}, monitorURL, nil
}

// natsServerName reads the INFO line of the server at addr.
func natsServerName(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	line, err := bufio.NewReaderSize(c, 4096).ReadString('\n')
	if err != nil {
		return "", err
	}
	js, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return "", fmt.Errorf("first line %.40q is not INFO", line)
	}
	var info struct {
		Name string `json:"server_name"`
	}
	if err := json.Unmarshal([]byte(js), &info); err != nil {
		return "", err
	}
	return info.Name, nil
}

// NATSServer starts a private nats-server for the test with
// StartNATSServer and registers t.Cleanup to stop it; it skips or fails the
// test as RequireBinary does when nats-server is not installed.
func NATSServer(t testing.TB, opts NATSServerOptions) *Broker {
	t.Helper()
	return started(t, &natsSpec, func(ctx context.Context) (*Broker, error) { return StartNATSServer(ctx, opts) })
}
