package pubsub

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// MQTT is a running embedded MQTT broker (3.1.1 and 5.0, QoS 0 to 2).
type MQTT struct {
	srv      *mqtt.Server
	addr     string
	tls      bool
	takeover *takeoverHook
}

// idSeq numbers the listeners of brokers started in one process.
var idSeq atomic.Int64

// StartMQTT starts an MQTT broker listening on addr and returns once it
// accepts connections.
func StartMQTT(addr string, o Options) (*MQTT, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	caps := mqtt.NewDefaultServerCapabilities()
	if o.MaxConnections > 0 {
		caps.MaximumClients = int64(o.MaxConnections)
	}
	// Deliveries a subscriber has not read yet wait in its queue, 8,192 of
	// them (mochi's default; a channel allocated per client), after which
	// the broker drops them: 4 minutes of the iPush study's 35 messages/s.
	srv := mqtt.New(&mqtt.Options{
		Capabilities:           caps,
		Logger:                 slog.New(slog.DiscardHandler),
		InlineClient:           false,
		SysTopicResendInterval: 3600,
	})
	var hook mqtt.Hook = new(allowHook)
	if o.Username != "" || o.Password != "" {
		hook = &passwordHook{user: []byte(o.Username), pass: []byte(o.Password)}
	}
	if err := srv.AddHook(hook, nil); err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	takeover := newTakeoverHook(srv)
	if err := srv.AddHook(takeover, nil); err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	ln := listeners.NewTCP(listeners.Config{
		ID:        "throng-" + strconv.FormatInt(idSeq.Add(1), 10),
		Address:   net.JoinHostPort(host, strconv.Itoa(port)),
		TLSConfig: o.TLS,
	})
	if err := srv.AddListener(ln); err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	_, p, err := net.SplitHostPort(ln.Address())
	if err != nil {
		srv.Close()
		return nil, errors.New("mqtt: the embedded broker has no TCP address")
	}
	return &MQTT{srv: srv, addr: net.JoinHostPort(host, p), tls: o.TLS != nil, takeover: takeover}, nil
}

// Addr is the host:port the broker listens on.
func (m *MQTT) Addr() string { return m.addr }

// URL is the broker's URL: mqtt://host:port, or mqtts:// with TLS.
func (m *MQTT) URL() string {
	if m.tls {
		return "mqtts://" + m.addr
	}
	return "mqtt://" + m.addr
}

// Clients is the number of connected clients.
func (m *MQTT) Clients() int64 { return atomic.LoadInt64(&m.srv.Info.ClientsConnected) }

// Dropped is how many messages the broker dropped (a subscriber's queue
// full).
func (m *MQTT) Dropped() int64 { return atomic.LoadInt64(&m.srv.Info.MessagesDropped) }

// Close stops the broker and closes its connections.
func (m *MQTT) Close() error { return m.srv.Close() }

// allowHook lets every client connect and use every topic.
type allowHook struct{ mqtt.HookBase }

func (h *allowHook) ID() string { return "throng-allow" }
func (h *allowHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}
func (h *allowHook) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (h *allowHook) OnACLCheck(*mqtt.Client, string, bool) bool              { return true }

// passwordHook lets in the one user with the right password.
type passwordHook struct {
	mqtt.HookBase
	user, pass []byte
}

func (h *passwordHook) ID() string { return "throng-password" }
func (h *passwordHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}
func (h *passwordHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	u, p := pk.Connect.Username, pk.Connect.Password
	return subtle.ConstantTimeCompare(u, h.user) == 1 && subtle.ConstantTimeCompare(p, h.pass) == 1
}
func (h *passwordHook) OnACLCheck(*mqtt.Client, string, bool) bool { return true }
