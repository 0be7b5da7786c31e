package pubsub

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// Params are an action's pubsub keys.
type Params struct {
	// Op is what the action does: publish (the default), connect (the user
	// connects again, with its subscription, if it is not connected) or
	// disconnect (the user leaves the broker cleanly; see session.go).
	Op string `yaml:"op"`
	// Subject is "own" (default: the user's index modulo subjects, so
	// publishers 0..N-1 take subjects 0..N-1) or a subject's number.
	Subject string `yaml:"subject"`
	// Size is the payload's size, at least HeaderSize (default 100B); the
	// mean of an exponential distribution.
	Size scenario.Size `yaml:"size"`
	// Distribution of the payload sizes: fixed (default), uniform between
	// Min and Max, or exponential with mean Size, clamped to [Min, Max].
	// A distribution is SizeLevels sizes at its quantiles, drawn at
	// random for each message.
	Distribution string        `yaml:"distribution"`
	Min          scenario.Size `yaml:"min"`
	Max          scenario.Size `yaml:"max"`
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
	op      string // OpPublish, OpConnect or OpDisconnect
	index   int    // in compile order: keys the session's prebuilt frames
	subject int32  // -1: the user's own
	size    int
	sizes   []int // a distribution's sizes (nil: fixed)
	qos     byte
	retain  bool
}

// Actions' ops.
const (
	OpPublish    = "publish"
	OpConnect    = "connect"
	OpDisconnect = "disconnect"
)

// ownSubject marks the user's own subject.
const ownSubject = -1

// Compile implements driver.Config. It also notes that the action's group
// is active (its users do more than listen), and the rate asked of it.
func (c *Config) Compile(a scenario.Action) (driver.Action, []error) {
	p := Params{Op: "publish", Subject: "own", Size: 100}
	errs := a.Params.Decode(&p)
	for _, ev := range eventNames {
		if a.Name == ev {
			errs = append(errs, a.Params.Errorf("name", "action name %q is also the driver's event %q in the results: name the action otherwise (like %s_now)", a.Name, ev, ev))
		}
	}
	switch p.Op {
	case OpPublish:
	case OpConnect, OpDisconnect:
		if len(errs) > 0 {
			return nil, errs
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.active[a.Group] = true
		c.compiled++
		return &action{name: a.Name, op: p.Op, index: c.compiled - 1}, nil
	default:
		errs = append(errs, a.Params.Errorf("op", "op %q: want publish, connect or disconnect (users subscribe when they connect: see pubsub.subscribe)", p.Op))
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
	sizes, derr := sizeLevels(p.Distribution, int(p.Size), int(p.Min), int(p.Max))
	if derr != "" {
		errs = append(errs, a.Params.Errorf("distribution", "%s", derr))
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
	return &action{name: a.Name, op: OpPublish, index: c.compiled - 1, subject: subject, size: int(p.Size), sizes: sizes, qos: byte(qos), retain: p.Retain}, nil
}

// isActive reports whether group's users have actions.
func (c *Config) isActive(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active[group]
}

// SizeLevels is how many sizes stand for a size distribution: its
// quantiles (i+0.5)/SizeLevels, each prebuilt as a frame.
const SizeLevels = 32

// sizeLevels returns the sizes of a distribution (nil for fixed), or what
// is wrong with it.
func sizeLevels(dist string, size, lo, hi int) ([]int, string) {
	if lo == 0 {
		lo = HeaderSize
	}
	switch dist {
	case "", "fixed":
		if lo != HeaderSize || hi != 0 {
			return nil, "min and max need a distribution (uniform or exponential)"
		}
		return nil, ""
	case "uniform", "exponential":
	default:
		return nil, fmt.Sprintf("distribution %q: want fixed, uniform or exponential", dist)
	}
	if hi == 0 && dist == "exponential" {
		hi = min(MaxSize, 20*size)
	}
	if lo < HeaderSize || hi > MaxSize || lo >= hi {
		return nil, fmt.Sprintf("a %s distribution needs %dB <= min < max <= 64MiB (got min %d, max %d)", dist, HeaderSize, lo, hi)
	}
	sizes := make([]int, SizeLevels)
	for i := range sizes {
		q := (float64(i) + 0.5) / SizeLevels
		var v float64
		if dist == "uniform" {
			v = float64(lo) + q*float64(hi-lo)
		} else {
			v = -float64(size) * math.Log(1-q)
		}
		sizes[i] = min(hi, max(lo, int(math.Round(v))))
	}
	return sizes, ""
}
