// Package pubsub is the publish/subscribe driver: NATS core and MQTT 3.1.1
// and 5.0 (QoS 0, 1 and 2), over TCP or TLS, with user name and password.
//
// Publishers are users whose actions publish; every message carries its
// stream (one publisher on one subject), a sequence number and its send
// time. Subscribers are users whose logon connects and subscribes; their
// deliveries are recorded as the event "deliver" with the end-to-end
// latency, and each subscriber checks every stream's sequence, so lost,
// duplicated and out-of-order messages are counted exactly, per subscriber
// and in total. After the load, the drain waits for the broker's backlog
// before anything is counted lost.
//
// Subscribers that only listen (a passive group) are read by a few epoll
// loops shared by all of them, with a lean codec of this package: a few
// hundred bytes and no goroutine per idle subscriber. Users that also act,
// and TLS connections, have one reader goroutine each.
package pubsub

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/secret"
)

// Name is the family's name: its scenario block is "pubsub:".
const Name = "pubsub"

// Protocols.
const (
	NATS  = "nats"  // NATS core
	MQTT  = "mqtt"  // MQTT 3.1.1
	MQTT5 = "mqtt5" // MQTT 5.0
	Auto  = "auto"  // from the target URL's scheme; NATS for the embedded broker
)

// Subscription modes of a group's users at logon.
const (
	SubOne      = "one"      // one subject: the user's index modulo subjects (round robin)
	SubAll      = "all"      // every subject, one subscription each
	SubWildcard = "wildcard" // one wildcard subscription covering every subject
	SubNone     = "none"     // nothing
)

// Settings is the scenario's "pubsub:" block.
type Settings struct {
	// Protocol is nats, mqtt (3.1.1), mqtt5 or auto (default: from the
	// target's scheme, nats for the embedded broker).
	Protocol string `yaml:"protocol"`
	// Subjects is how many subjects (MQTT topics) there are (default 1),
	// named by Subject with {n} = 0..Subjects-1.
	Subjects int `yaml:"subjects"`
	// Subject is the subjects' name pattern: {n} is the subject's number,
	// {run} the run's id (the same in every segment of a distributed run,
	// different from any other run's). Default "throng.{run}.{n}" for NATS,
	// "throng/{run}/{n}" for MQTT: every run has subjects of its own. A
	// pattern without {run} gives the same names to every run.
	Subject string `yaml:"subject"`
	// Subscribe says, by group name, what a user subscribes to when it logs
	// on: one, all, wildcard or none. Default: passive groups (no actions)
	// one, others none.
	Subscribe map[string]string `yaml:"subscribe"`
	// QoS is the MQTT quality of service of subscriptions and the default
	// of publishes (0, 1 or 2; default 0). NATS core has none.
	QoS int `yaml:"qos"`
	// CleanSession starts every MQTT connection with a new session
	// (default true); false keeps it (SessionExpiry with MQTT 5).
	CleanSession bool `yaml:"clean_session"`
	// SessionExpiry is how long an MQTT 5 broker keeps a session after a
	// disconnect when clean_session is false (default 1h).
	SessionExpiry scenario.Duration `yaml:"session_expiry"`
	// KeepAlive bounds how long a dead connection goes unnoticed (default
	// 30s, both protocols): a connection that received nothing for half
	// of it is pinged (NATS PING, MQTT PINGREQ; MQTT also when it sent
	// nothing for half of it), and one whose ping stays unanswered for
	// another half is taken for dead and reconnected (keepalive.go). It is
	// also the MQTT CONNECT's keep-alive.
	KeepAlive scenario.Duration `yaml:"keepalive"`
	// Timeout bounds connecting (dial, TLS, the protocol's handshake and
	// the subscription's confirmation) and a publish's acknowledgement
	// (default 10s).
	Timeout scenario.Duration `yaml:"timeout"`
	// Username is written as is, or read from ${NAME} or ${file:PATH}.
	Username string `yaml:"username"`
	// Password is read from ${NAME} or ${file:PATH}, never written.
	Password string `yaml:"password"`
	TLS      TLS    `yaml:"tls"`
	// Readers is the number of epoll loops that read the passive
	// subscribers (default: half the cores, at least 1).
	Readers int `yaml:"readers"`
	// DrainIdle ends the drain early when no message has arrived for this
	// long while some are still missing (default 2s); phases.drain bounds
	// it in any case.
	DrainIdle scenario.Duration `yaml:"drain_idle"`
	// ClientID prefixes the MQTT client identifiers and NATS connection
	// names, followed by the user's ID. Default "throng-" and a token of
	// the run, so that two runs against one broker never share an
	// identifier (a broker takes a connection's identifier over from the
	// previous one, and may drop its subscriptions); give one to keep the
	// identifiers, and persistent sessions, from run to run.
	ClientID string `yaml:"client_id"`
	// Monitor is a NATS server's HTTP monitoring URL (http://host:8222):
	// when the server closes a connection, the reason is read there
	// (/connz), so slow consumers cut off by the server are counted as such.
	Monitor string `yaml:"monitor"`
	// AccountingFile, when set, receives one CSV line per subscriber and
	// stream at the end of the drain: expected, received, lost, duplicated,
	// out of order.
	AccountingFile string `yaml:"accounting_file"`
}

// TLS is the block's "tls:" settings, for mqtts:// and tls:// targets.
type TLS struct {
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	CAFile             string `yaml:"ca_file"` // PEM certificates to trust (default: the system's)
	ServerName         string `yaml:"server_name"`
}

// Defaults.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultKeepAlive = 30 * time.Second
	DefaultDrainIdle = 2 * time.Second
)

// Config is a decoded block bound to a target. It implements driver.Config,
// driver.Events and driver.Describer, and its Source reads the run's
// counters.
type Config struct {
	Settings
	block   scenario.Node
	proto   string // NATS, MQTT or MQTT5
	addr    string // host:port
	tls     bool
	tlsCfg  *tls.Config
	target  string // the URL used, for messages
	user    string
	pass    string
	readers int

	mu       sync.Mutex
	active   map[string]bool    // groups with actions (from Compile)
	asked    map[string]float64 // per-user publish rate asked of each group
	publish  []string           // names of the publish actions (from Compile)
	compiled int                // actions compiled
	space    space              // the run's names (from Prepare)

	cur atomic.Pointer[run] // the repetition in progress (Observe to Drain)
}

var (
	_ driver.Config    = (*Config)(nil)
	_ driver.Events    = (*Config)(nil)
	_ driver.Describer = (*Config)(nil)
)

// Decode reads a scenario's "pubsub:" block for a target: a URL
// (nats://, tls://, mqtt://, mqtts://) or several separated by spaces (the
// embedded brokers), of which the protocol's is used. Every problem is
// returned, positioned.
func Decode(block scenario.Node, target string) (*Config, []error) {
	return decode(block, target, "")
}

// DecodeAs is Decode for a family named after one protocol ("nats:",
// "mqtt:" blocks): the block's protocol may only refine it (mqtt5).
func DecodeAs(block scenario.Node, target, family string) (*Config, []error) {
	return decode(block, target, family)
}

func decode(block scenario.Node, target, family string) (*Config, []error) {
	c := &Config{
		Settings: Settings{Protocol: Auto, Subjects: 1, CleanSession: true, KeepAlive: scenario.Duration(DefaultKeepAlive),
			Timeout: scenario.Duration(DefaultTimeout), DrainIdle: scenario.Duration(DefaultDrainIdle),
			SessionExpiry: scenario.Duration(time.Hour), ClientID: "throng-" + runToken() + "-"},
		block: block, active: map[string]bool{}, asked: map[string]float64{},
		space: space{id: runToken(), k: 1, n: 1},
	}
	errs := block.Decode(&c.Settings)
	if family != "" {
		switch {
		case c.Protocol == Auto:
			c.Protocol = family
		case family == MQTT && c.Protocol == MQTT5:
		case c.Protocol != family:
			errs = append(errs, block.Errorf("protocol", "the %s: block speaks %s, not %s (use a pubsub: block)", family, family, c.Protocol))
		}
	}
	errs = append(errs, c.resolveTarget(target)...)
	errs = append(errs, c.Validate()...)
	var err error
	if c.Username != "" {
		if c.user, err = secret.Read(c.Username, true); err != nil {
			errs = append(errs, block.Errorf("username", "username: %v", err))
		}
	}
	if c.Password != "" {
		if c.pass, err = secret.Read(c.Password, false); err != nil {
			errs = append(errs, block.Errorf("password", "password: %v", err))
		}
	}
	if c.tls {
		c.tlsCfg = &tls.Config{ServerName: c.TLS.ServerName, InsecureSkipVerify: c.TLS.InsecureSkipVerify}
		if c.tlsCfg.ServerName == "" {
			c.tlsCfg.ServerName, _, _ = net.SplitHostPort(c.addr)
		}
		if c.TLS.CAFile != "" {
			pem, err := secret.ReadFile(c.TLS.CAFile, secret.MaxFileSize)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, block.Errorf("tls.ca_file", "tls.ca_file %s: no PEM certificate could be read (%v)", c.TLS.CAFile, err))
			}
			c.tlsCfg.RootCAs = pool
		}
	}
	c.readers = c.Readers
	if c.readers <= 0 {
		c.readers = max(1, cores()/2)
	}
	return c, errs
}

// Validate implements driver.Config.
func (c *Config) Validate() []error {
	var errs []error
	b := c.block
	switch c.Protocol {
	case Auto, NATS, MQTT, MQTT5:
	default:
		errs = append(errs, b.Errorf("protocol", "protocol %q: want nats, mqtt (3.1.1), mqtt5 or auto", c.Protocol))
	}
	if c.Subjects < 1 || c.Subjects > 1_000_000 {
		errs = append(errs, b.Errorf("subjects", "subjects is %d: want 1 to 1,000,000", c.Subjects))
	}
	pattern := c.pattern()
	if c.Subjects > 1 && !strings.Contains(pattern, "{n}") {
		errs = append(errs, b.Errorf("subject", "subject %q needs {n} (the subject's number) when there are %d subjects", pattern, c.Subjects))
	}
	if strings.ContainsAny(pattern, " \t\r\n*>+#") {
		errs = append(errs, b.Errorf("subject", "subject %q must hold no spaces and no wildcards", pattern))
	}
	for g, mode := range c.Subscribe {
		switch mode {
		case SubOne, SubAll, SubNone:
		case SubWildcard:
			if !wildcardable(pattern) {
				errs = append(errs, b.Errorf("subscribe", "group %s: a wildcard subscription needs {n} to be a whole token of the subject (like a.{n} or a/{n}/b), not %q", g, pattern))
			}
		default:
			errs = append(errs, b.Errorf("subscribe", "group %s: subscribe %q: want one, all, wildcard or none", g, mode))
		}
	}
	if c.QoS < 0 || c.QoS > 2 {
		errs = append(errs, b.Errorf("qos", "qos is %d: want 0, 1 or 2", c.QoS))
	}
	if c.Timeout <= 0 {
		errs = append(errs, b.Errorf("timeout", "timeout must be greater than 0"))
	}
	if c.KeepAlive < scenario.Duration(time.Second) || c.KeepAlive > scenario.Duration(65535*time.Second) {
		errs = append(errs, b.Errorf("keepalive", "keepalive must be between 1s and 65535s"))
	}
	if c.DrainIdle <= 0 {
		errs = append(errs, b.Errorf("drain_idle", "drain_idle must be greater than 0"))
	}
	if c.Readers < 0 || c.Readers > 64 {
		errs = append(errs, b.Errorf("readers", "readers is %d: want 0 (automatic) to 64", c.Readers))
	}
	if c.Monitor != "" && !strings.HasPrefix(c.Monitor, "http://") && !strings.HasPrefix(c.Monitor, "https://") {
		errs = append(errs, b.Errorf("monitor", "monitor %q: want the NATS server's monitoring URL, like http://127.0.0.1:8222", c.Monitor))
	}
	if strings.ContainsAny(c.ClientID, " \t\r\n") {
		errs = append(errs, b.Errorf("client_id", "client_id must hold no spaces"))
	}
	return errs
}

// runToken is a short random token that tells runs apart.
func runToken() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// space is where a repetition's names come from (Prepare): the run's id,
// the same in every segment of a distributed run; the repetition; the
// segment k of n.
type space struct {
	id   string
	rep  int
	k, n int
}

// pattern is the subjects' name pattern: the block's, or the default of
// the protocol (with the run's id).
func (c *Config) pattern() string {
	switch {
	case c.Subject != "":
		return c.Subject
	}
	return c.protocol().defaultPattern()
}

// wildcardable reports whether {n} is a whole token of the pattern.
func wildcardable(pattern string) bool {
	i := strings.Index(pattern, "{n}")
	if i < 0 {
		return false
	}
	before, after := pattern[:i], pattern[i+3:]
	sep := func(s string, last bool) bool {
		if s == "" {
			return true
		}
		c := s[0]
		if last {
			c = s[len(s)-1]
		}
		return c == '.' || c == '/'
	}
	return sep(before, true) && sep(after, false)
}

// Protocol returns the protocol in use: nats, mqtt or mqtt5.
func (c *Config) ProtocolName() string { return c.proto }

// Describe implements driver.Describer: settings worth recording, never
// secrets.
func (c *Config) Describe() map[string]string {
	m := map[string]string{
		"protocol": c.proto,
		"subjects": strconv.Itoa(c.Subjects),
		"subject":  c.pattern(),
		"tls":      strconv.FormatBool(c.tls),
		"readers":  strconv.Itoa(c.readers),
		"timeout":  c.Timeout.String(),
		"auth":     strconv.FormatBool(c.user != "" || c.pass != ""),
	}
	m["keepalive"] = c.KeepAlive.String()
	c.protocol().describe(c, m)
	c.mu.Lock()
	m["publish_actions"] = strings.Join(c.publish, ",")
	c.mu.Unlock()
	return m
}

// Prepare implements driver.Config. The family has no data set; it takes
// the repetition's names: the run's id (in the subjects and the messages'
// run tag), the same in every segment of a distributed run, and the
// segment, whose publishers and subscribers meet those of the others (see
// control.go).
func (c *Config) Prepare(_ context.Context, pop driver.Population) error {
	if pop.Run == "" {
		return nil // outside a runner: the decoded random id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.space = space{id: pop.Run, rep: pop.Repetition, k: max(1, pop.Segment), n: max(1, pop.Segments)}
	return nil
}

// Preflight connects once (and authenticates) before the run, so a wrong
// target or refused credentials give one clear message instead of a run
// full of errors.
func (c *Config) Preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout.D())
	defer cancel()
	cn, err := c.connect(ctx, newRun(c, nil), request{user: -1})
	if err != nil {
		return fmt.Errorf("target %s: %w", c.target, err)
	}
	cn.close()
	return nil
}

// subscribeMode is what a user of group subscribes to at logon.
func (c *Config) subscribeMode(group string) string {
	if m, ok := c.Subscribe[group]; ok {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active[group] {
		return SubNone
	}
	return SubOne
}
