package pubsub

import (
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	pubsubtarget "github.com/throng-io/throng/internal/targets/pubsub"
)

// Family is the pubsub family ("pubsub:" blocks) as the program wires it
// in: NATS or MQTT, picked by the block's protocol or the target URL's
// scheme. Its embedded target is both brokers (internal/targets/pubsub:
// NATS on the port asked, MQTT on the next). The driver's own counters
// (CounterSources) join the run's.
func Family() driver.Family {
	return family(Name, func(listen string) (driver.Target, error) {
		b, err := pubsubtarget.StartBoth(listen, pubsubtarget.Options{})
		if err != nil {
			return nil, err
		}
		return b, nil
	})
}

// NATSFamily is the "nats:" family: a pubsub block with the protocol fixed
// to NATS, and one NATS broker as its embedded target (`throng serve nats`).
func NATSFamily() driver.Family {
	return family(NATS, func(listen string) (driver.Target, error) {
		n, err := pubsubtarget.StartNATS(listen, pubsubtarget.Options{})
		if err != nil {
			return nil, err
		}
		return n, nil
	})
}

// MQTTFamily is the "mqtt:" family: a pubsub block with the protocol fixed
// to MQTT (mqtt5 may refine it), and one MQTT broker as its embedded target.
func MQTTFamily() driver.Family {
	return family(MQTT, func(listen string) (driver.Target, error) {
		m, err := pubsubtarget.StartMQTT(listen, pubsubtarget.Options{})
		if err != nil {
			return nil, err
		}
		return m, nil
	})
}

func family(name string, embedded func(string) (driver.Target, error)) driver.Family {
	return driver.Family{
		Name:   name,
		Events: (&Config{}).EventActions(),
		Decode: func(block scenario.Node, env driver.Env) (driver.Config, []error) {
			if name == Name {
				return Decode(block, env.Target.URL())
			}
			return DecodeAs(block, env.Target.URL(), name)
		},
		Embedded: embedded,
	}
}

// CounterSources implements driver.CounterSources: the driver's counters
// (Source), read beside the server's at every interval.
func (c *Config) CounterSources() []sampler.Source { return []sampler.Source{c.Source()} }

var (
	_ driver.CounterSources = (*Config)(nil)
	_ driver.Preflighter    = (*Config)(nil)
)
