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
	// connects again, with its subscription, if it is not connected),
	// disconnect (the user leaves the broker cleanly; see session.go) or
	// subscribe (the user subscribes to Subject on its connection; see
	// subscribe.go).
	Op string `yaml:"op"`
	// Subject is "own" (default: the user's index modulo subjects, so
	// publishers 0..N-1 take subjects 0..N-1) or a subject's number; for
	// subscribe (which needs it) also "all" (every subject, one filter
	// each) or "wildcard" (one wildcard filter).
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
	// subMode is a subscribe's SubAll or SubWildcard ("": subject).
	subMode string
}

// Actions' ops.
const (
	OpPublish    = "publish"
	OpConnect    = "connect"
	OpDisconnect = "disconnect"
	OpSubscribe  = "subscribe"
)

// ownSubject marks the user's own subject.
const ownSubject = -1

// Compile implements driver.Config. It also notes that the action's group
// is active (its users do more than listen), and the rate asked of it.
func (c *Config) Compile(a scenario.Action) (driver.Action, []error) {
	p := Params{Op: "publish", Size: 100}
	errs := a.Params.Decode(&p)
	p.Subject = strings.TrimSpace(p.Subject)
	if p.Subject == "" && p.Op != OpSubscribe {
		p.Subject = "own"
	}
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
	case OpSubscribe:
		return c.compileSubscribe(a, p, errs)
	default:
		errs = append(errs, a.Params.Errorf("op", "op %q: want publish, connect, disconnect or subscribe (users also subscribe when they connect: see pubsub.subscribe)", p.Op))
	}
	subject := int32(ownSubject)
	if p.Subject != "own" {
		n, err := strconv.Atoi(p.Subject)
		if err != nil || n < 0 || n >= c.Subjects {
			errs = append(errs, a.Params.Errorf("subject", "subject %q: want own or a subject's number, 0 to %d", p.Subject, c.Subjects-1))
		}
		subject = int32(n)
	}
	if p.Size < HeaderSize || p.Size > MaxSize {
		errs = append(errs, a.Params.Errorf("size", "size %s: want %dB (the header: run, publisher, subject, sequence number, send time) to 64MiB", p.Size, HeaderSize))
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
	if !c.protocol().qosRetain() && (qos > 0 || p.Retain) {
		errs = append(errs, a.Params.Errorf("qos", "NATS core has no QoS and no retained messages: use an MQTT target for qos and retain"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[a.Group] = true
	c.asked[a.Group] += a.Rate.PerSecond
	c.publish = append(c.publish, a.Name)
	c.compiled++
	return &action{name: a.Name, op: OpPublish, index: c.compiled - 1, subject: subject, size: int(p.Size), sizes: sizes, qos: byte(qos), retain: p.Retain}, nil
}

// compileSubscribe compiles an action op: subscribe, whose subject is a
// subject's number, own, all or wildcard (required). Its other keys are
// publish's and ignored; the subscription's QoS is the block's.
func (c *Config) compileSubscribe(a scenario.Action, p Params, errs []error) (driver.Action, []error) {
	act := &action{name: a.Name, op: OpSubscribe, subject: ownSubject}
	switch p.Subject {
	case "":
		errs = append(errs, a.Params.Errorf("subject", "op subscribe needs a subject: a subject's number (0 to %d), own, all or wildcard", c.Subjects-1))
	case "own":
	case SubAll, SubWildcard:
		act.subMode = p.Subject
		if p.Subject == SubWildcard && !wildcardable(c.pattern()) {
			errs = append(errs, a.Params.Errorf("subject", "a wildcard subscription needs {n} to be a whole token of pubsub.subject (like a.{n} or a/{n}/b), not %q: use subject: all", c.pattern()))
		}
	default:
		n, err := strconv.Atoi(p.Subject)
		if err != nil || n < 0 || n >= c.Subjects {
			errs = append(errs, a.Params.Errorf("subject", "subject %q: want own, all, wildcard or a subject's number, 0 to %d", p.Subject, c.Subjects-1))
		}
		act.subject = int32(n)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[a.Group] = true
	c.compiled++
	act.index = c.compiled - 1
	return act, nil
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
