package pubsub

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Targets: nats:// (NATS, port 4222), tls:// (NATS over TLS), mqtt:// and
// tcp:// (MQTT, 1883), mqtts:// and ssl:// (MQTT over TLS, 8883). The
// embedded target is both brokers' URLs separated by a space, of which the
// protocol's is used.

// resolveTarget picks the URL of the protocol and sets proto, addr and tls.
func (c *Config) resolveTarget(target string) []error {
	urls := strings.Fields(target)
	if len(urls) == 0 {
		return []error{fmt.Errorf("target is empty: give a nats://, tls://, mqtt:// or mqtts:// URL")}
	}
	want := c.Protocol
	if want == Auto && len(urls) > 1 {
		want = NATS // the embedded brokers: NATS unless asked
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return []error{fmt.Errorf("target %q: %v", raw, err)}
		}
		var proto, port string
		switch u.Scheme {
		case "nats", "tls":
			proto, port = NATS, "4222"
		case "mqtt", "mqtts", "tcp", "ssl":
			proto, port = MQTT, "1883"
			if u.Scheme == "mqtts" || u.Scheme == "ssl" {
				port = "8883"
			}
		default:
			if len(urls) == 1 {
				return []error{fmt.Errorf("target %q: the pubsub driver needs a nats://, tls:// (NATS over TLS), mqtt:// or mqtts:// URL", raw)}
			}
			continue
		}
		family := want
		if family == MQTT5 {
			family = MQTT
		}
		if want != Auto && family != proto {
			if len(urls) == 1 {
				return []error{c.block.Errorf("protocol", "protocol %s does not match the target %s", want, u.Redacted())}
			}
			continue
		}
		if u.User != nil {
			return []error{fmt.Errorf("target %s holds credentials: put them in pubsub.username and pubsub.password (read from ${NAME} or ${file:PATH})", u.Redacted())}
		}
		if u.Hostname() == "" {
			return []error{fmt.Errorf("target %q has no host", raw)}
		}
		if u.Port() != "" {
			port = u.Port()
		}
		c.proto = proto
		if want == MQTT5 {
			c.proto = MQTT5
		}
		c.addr = net.JoinHostPort(u.Hostname(), port)
		c.tls = u.Scheme == "tls" || u.Scheme == "mqtts" || u.Scheme == "ssl"
		c.target = u.Redacted()
		return nil
	}
	return []error{fmt.Errorf("target %q has no URL for protocol %s", target, want)}
}
