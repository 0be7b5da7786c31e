package pubsub

import (
	"errors"
	"net"
	"strconv"
)

// Both is the embedded target of the pubsub family: a NATS server and an
// MQTT broker side by side, so a scenario can pick its protocol after the
// target is started.
type Both struct {
	NATS *NATS
	MQTT *MQTT
}

// StartBoth starts both brokers: NATS on addr, MQTT on the next port (or
// on a free port when addr's port is 0).
func StartBoth(addr string, o Options) (*Both, error) {
	n, err := StartNATS(addr, o)
	if err != nil {
		return nil, err
	}
	host, port, _ := splitAddr(addr)
	mport := 0
	if port != 0 {
		mport = port + 1
	}
	m, err := StartMQTT(net.JoinHostPort(host, strconv.Itoa(mport)), o)
	if err != nil {
		n.Close()
		return nil, err
	}
	return &Both{NATS: n, MQTT: m}, nil
}

// URL lists both brokers' URLs, separated by a space (the pubsub driver
// takes the one of its protocol).
func (b *Both) URL() string { return b.NATS.URL() + " " + b.MQTT.URL() }

// Close stops both brokers.
func (b *Both) Close() error { return errors.Join(b.MQTT.Close(), b.NATS.Close()) }
