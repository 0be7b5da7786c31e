package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	bin, err := FindBinary("nats-server", NATSServerPaths...)
	if err != nil {
		return nil, err
	}
	start := func(ctx context.Context, port int) (*Server, error) {
		return startBroker(ctx, "nats-server", port, func(port int) (*Server, error) {
			return startNATSOnce(ctx, bin, opts, port)
		})
	}
	s, err := start(ctx, opts.Port)
	if err != nil {
		return nil, err
	}
	port, _ := strconv.Atoi(s.Addr[strings.LastIndexByte(s.Addr, ':')+1:])
	return &Broker{Server: s, start: start, port: port}, nil
}

func startNATSOnce(ctx context.Context, bin string, opts NATSServerOptions, port int) (_ *Server, err error) {
	dir, err := newPrivateDir("nats")
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
	monitorURL := ""
	if opts.Monitor {
		mport, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("testenv: nats-server: a monitoring port: %w", err)
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
		return nil, fmt.Errorf("testenv: nats-server: %w", err)
	}
	logPath := filepath.Join(dir, "nats.log")
	proc, err = startProcess(dir, logPath, bin, "-c", confPath)
	if err != nil {
		return nil, fmt.Errorf("testenv: nats-server: starting %s: %w", bin, err)
	}
	raiseNoFile(proc.pid, opts.NoFile)
	if err := waitNATSReady(ctx, proc, addr, name, logPath); err != nil {
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("testenv: nats-server: %s: %w", addr, err)
		}
		return nil, fmt.Errorf("testenv: nats-server on %s (pid %d) did not become ready: %w%s", addr, proc.pid, err, logSuffix(logPath))
	}
	return &Server{Name: "nats-server", Addr: addr, URL: "nats://" + addr, Dir: dir, PID: proc.pid,
		ErrorLog: logPath, MonitorURL: monitorURL, proc: proc, stopSignal: syscall.SIGTERM}, nil
}

// waitNATSReady reads INFO from addr until it names this start's server
// while proc is still running.
func waitNATSReady(ctx context.Context, proc *process, addr, name, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, BrokerReadyTimeout)
	defer cancel()
	tick := time.NewTicker(brokerPollInterval)
	defer tick.Stop()
	var last error
	for {
		if logContains(logPath, "address already in use") || logContains(logPath, "Error listening on port") {
			return errAddrInUse
		}
		got, err := natsServerName(ctx, addr)
		switch {
		case err != nil:
			last = err
		case got != name:
			last = fmt.Errorf("the server on %s is %q, not this start's %q (another server on this port?)", addr, got, name)
		default:
			select {
			case <-proc.done:
				last = errors.New("answered the readiness probe, but the nats-server started here has exited")
			default:
				return nil
			}
		}
		select {
		case <-proc.done:
			if logContains(logPath, "address already in use") {
				return errAddrInUse
			}
			return fmt.Errorf("nats-server exited during start (%s)", exitDesc(proc.waitErr))
		case <-ctx.Done():
			return fmt.Errorf("%w; last probe: %v", context.Cause(ctx), last)
		case <-tick.C:
		}
	}
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
	RequireBinary(t, "nats-server", NATSServerPaths...)
	b, err := StartNATSServer(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("stopping nats-server: %v", err)
		}
	})
	return b
}
