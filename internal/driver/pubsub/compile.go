package pubsub

import (
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// Params are an action's pubsub keys.
type Params struct {
	// Op is what the action does: publish (the default and, for now, the
	// only one).
	Op string `yaml:"op"`
	// Subject is "own" (default: the user's index modulo subjects, so
	// publishers 0..N-1 take subjects 0..N-1) or a subject's number.
	Subject string `yaml:"subject"`
	// Size is the payload's size, at least HeaderSize (default 100B).
	Size scenario.Size `yaml:"size"`
	// QoS is the MQTT quality of service (default: the block's qos).
	QoS *int `yaml:"qos"`
	// Retain asks an MQTT broker to keep the message for late subscribers.
	Retain bool `yaml:"retain"`
}

// MaxSize bounds a message's size.
const MaxSize = 64 << 20

// action is a compiled action.
type action struct {
	name    string
	index   int   // in compile order: keys the session's prebuilt frames
	subject int32 // -1: the user's own
	size    int
	qos     byte
	retain  bool
}

// ownSubject marks the user's own subject.
const ownSubject = -1

// Compile implements driver.Config. It also notes that the action's group
// is active (its users do more than listen), and the rate asked of it.
func (c *Config) Compile(a scenario.Action) (driver.Action, []error) {
	p := Params{Op: "publish", Subject: "own", Size: 100}
	errs := a.Params.Decode(&p)
	if p.Op != "publish" {
		errs = append(errs, a.Params.Errorf("op", "op %q: only publish is supported (subscribers subscribe when they log on: see pubsub.subscribe)", p.Op))
	}
	subject := int32(ownSubject)
	if p.Subject != "own" {
		n, err := strconv.Atoi(strings.TrimSpace(p.Subject))
		if err != nil || n < 0 || n >= c.Subjects {
			errs = append(errs, a.Params.Errorf("subject", "subject %q: want own or a subject's number, 0 to %d", p.Subject, c.Subjects-1))
		}
		subject = int32(n)
	}
	if p.Size < HeaderSize || p.Size > MaxSize {
		errs = append(errs, a.Params.Errorf("size", "size %s: want %dB (the header: stream, sequence number, send time) to 64MiB", p.Size, HeaderSize))
	}
	qos := c.QoS
	if p.QoS != nil {
		qos = *p.QoS
	}
	if qos < 0 || qos > 2 {
		errs = append(errs, a.Params.Errorf("qos", "qos is %d: want 0, 1 or 2", qos))
	}
	if c.proto == NATS && (qos > 0 || p.Retain) {
		errs = append(errs, a.Params.Errorf("qos", "NATS core has no QoS and no retained messages: use an MQTT target for qos and retain"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[a.Group] = true
	c.asked[a.Group] += a.Rate.PerSecond
	c.compiled++
	return &action{name: a.Name, index: c.compiled - 1, subject: subject, size: int(p.Size), qos: byte(qos), retain: p.Retain}, nil
}

// isActive reports whether group's users have actions.
func (c *Config) isActive(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active[group]
}
