// Package pubsub holds the embedded publish/subscribe brokers: a NATS
// server (nats-server as a library) and an MQTT 3.1.1/5.0 broker (mochi-mqtt),
// the zero-setup targets of the pub/sub presets (`throng run ipush-2` with
// nothing installed) and of `throng serve nats` / `throng serve mqtt`.
// Both listen on TCP (127.0.0.1:0 picks a free port), log nothing, and take
// optional credentials and TLS.
package pubsub

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// Options configure a broker. The zero value is an anonymous broker with
// no connection limit beyond the protocol's default.
type Options struct {
	// MaxConnections refuses connections past this many (0: NATS's default
	// of 65,536; MQTT unlimited).
	MaxConnections int
	// Username and Password, when set, are required of every client.
	Username, Password string
	// MaxPending (NATS) is how many bytes may wait for one client before
	// the server cuts it off as a slow consumer (0: 64 MB).
	MaxPending int64
	// Monitor (NATS) serves the HTTP monitoring endpoint on a free port
	// (MonitorURL).
	Monitor bool
	// TLS, when set, makes the listener TLS-only (NATS: tls_required, the
	// client upgrades after INFO; MQTT: TLS from the first byte).
	TLS *tls.Config
}

// ReadyTimeout bounds a broker's start.
const ReadyTimeout = 10 * time.Second

// NATS is a running embedded NATS server.
type NATS struct {
	ns   *natsserver.Server
	addr string
	tls  bool
}

// StartNATS starts a NATS server listening on addr and returns once it
// accepts connections.
func StartNATS(addr string, o Options) (*NATS, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		port = natsserver.RANDOM_PORT
	} else if l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
		// nats-server would only time out: say why at once.
		return nil, fmt.Errorf("nats: %w", err)
	} else {
		l.Close()
	}
	opts := &natsserver.Options{
		Host: host, Port: port, NoLog: true, NoSigs: true, MaxConn: o.MaxConnections,
		Username: o.Username, Password: o.Password,
		// 3,000 subscribers that read late must not be cut off: the
		// defaults of nats-server (64 MB pending, 10 s write deadline).
		MaxPending: 64 << 20, WriteDeadline: 10 * time.Second,
	}
	if o.MaxPending > 0 {
		opts.MaxPending, opts.MaxPayload = o.MaxPending, int32(min(o.MaxPending, 1<<20))
	}
	if o.Monitor {
		opts.HTTPHost, opts.HTTPPort = host, natsserver.RANDOM_PORT
	}
	if o.TLS != nil {
		opts.TLS, opts.TLSConfig, opts.TLSTimeout = true, o.TLS, 5
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(ReadyTimeout) {
		ns.Shutdown()
		return nil, errors.New("nats: the embedded server did not become ready")
	}
	a, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		ns.Shutdown()
		return nil, errors.New("nats: the embedded server has no TCP address")
	}
	return &NATS{ns: ns, addr: net.JoinHostPort(host, strconv.Itoa(a.Port)), tls: o.TLS != nil}, nil
}

// Addr is the host:port the server listens on.
func (n *NATS) Addr() string { return n.addr }

// URL is the server's URL: nats://host:port, or tls:// with TLS.
func (n *NATS) URL() string {
	if n.tls {
		return "tls://" + n.addr
	}
	return "nats://" + n.addr
}

// MonitorURL is the HTTP monitoring endpoint ("" without Options.Monitor).
func (n *NATS) MonitorURL() string {
	if a := n.ns.MonitorAddr(); a != nil {
		return "http://" + a.String()
	}
	return ""
}

// Clients is the number of connected clients.
func (n *NATS) Clients() int { return n.ns.NumClients() }

// SlowConsumers is how many times the server cut off a client that read
// too slowly.
func (n *NATS) SlowConsumers() int64 { return n.ns.NumSlowConsumers() }

// Close stops the server and closes its connections.
func (n *NATS) Close() error {
	n.ns.Shutdown()
	n.ns.WaitForShutdown()
	return nil
}

// splitAddr splits "host:port"; an empty host is 127.0.0.1.
func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: %v", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("listen address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}
