package pubsub

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// publication is one action's prebuilt message on one stream: the whole
// frame (PUB or PUBLISH, header, filler) is built once; a publish patches
// the sequence number, the send time and, with MQTT QoS > 0, the packet
// identifier, and writes it in one call.
type publication struct {
	st    *stream
	frame []byte
	at    int // offset of the payload (its header) in frame
	idAt  int // offset of the MQTT packet identifier, -1 without
	// levels are the frames of a size distribution's sizes (nil: the
	// size is fixed), drawn with rnd.
	levels []*publication
	rnd    uint64
}

// pick returns the frame of this message: one of a distribution's sizes,
// drawn at random (xorshift), or the only one.
func (p *publication) pick() *publication {
	if p.levels == nil {
		return p
	}
	p.rnd ^= p.rnd << 13
	p.rnd ^= p.rnd >> 7
	p.rnd ^= p.rnd << 17
	return p.levels[p.rnd%uint64(len(p.levels))]
}

// Do implements driver.Session: publish one message. Its latency, timed by
// the engine, is the write (NATS, MQTT QoS 0) or the broker's
// acknowledgement (PUBACK for QoS 1, PUBCOMP for QoS 2). It does not
// allocate once the action's frame is built.
func (s *session) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	act := a.(*action)
	switch act.op {
	case OpConnect:
		return driver.Outcome{}, s.reconnect(ctx)
	case OpDisconnect:
		return driver.Outcome{}, s.disconnect()
	case OpSubscribe:
		return driver.Outcome{}, s.subscribe(ctx, act)
	}
	nc, ep, err := s.conn()
	if err != nil {
		return driver.Outcome{}, err
	}
	p := s.publication(act).pick()
	// Raise the count before the write (see registry.go), lower it again
	// if the message did not go out.
	seq := p.st.sent.Add(1)
	putSeqTime(p.frame[p.at:], seq, time.Now().UnixNano())
	var id uint16
	if p.idAt >= 0 {
		id = s.nextID()
		p.frame[p.idAt], p.frame[p.idAt+1] = byte(id>>8), byte(id)
	}
	n, err := s.write(nc, p.frame)
	out := driver.Outcome{BytesOut: int64(n)}
	if err != nil {
		if n < len(p.frame) {
			p.st.sent.Add(^uint64(0))
		}
		s.broken(nc)
		if driver.Classify(err) == driver.Timeout {
			return out, driver.Errorf(driver.Timeout, err)
		}
		return out, driver.Errorf(driver.IO, err)
	}
	if act.qos == 0 {
		return out, nil
	}
	return out, s.awaitAck(ctx, ep, id)
}

// awaitAck waits for the PUBACK (QoS 1) or PUBCOMP (QoS 2) of packet id,
// within the timeout.
func (s *session) awaitAck(ctx context.Context, ep *endpoint, id uint16) error {
	if s.timer == nil {
		s.timer = time.NewTimer(s.c.Timeout.D())
	} else {
		s.timer.Reset(s.c.Timeout.D())
	}
	defer s.timer.Stop()
	for {
		select {
		case got := <-ep.acks:
			if got == id {
				return nil
			}
		case <-s.timer.C:
			return driver.Errorf(driver.Timeout, errNoAck)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

var errNoAck = errors.New("mqtt: no acknowledgement of the publish within the timeout")

// broken marks the connection broken after a failed write; the next Do
// reconnects.
func (s *session) broken(nc net.Conn) {
	s.mu.Lock()
	if s.nc == nc {
		s.dead = true
	}
	s.mu.Unlock()
	nc.Close()
}

// publication returns the action's frame for the user's stream, building
// both on first use.
func (s *session) publication(act *action) *publication {
	if p := s.pubs[act.index]; p != nil {
		return p
	}
	c := s.c
	subject := act.subject
	if subject == ownSubject {
		subject = int32(s.u.ID % c.Subjects)
	}
	if s.streams == nil {
		s.streams = map[int32]*stream{}
		s.pubs = map[int]*publication{}
	}
	st := s.streams[subject]
	if st == nil {
		st = s.r.reg.local(s.u.ID, subject)
		s.streams[subject] = st
	}
	name := s.r.subjectName(int(subject))
	build := func(size int) *publication {
		payload := fillPayload(size, s.r.tag, st.key)
		p := &publication{st: st, idAt: -1}
		p.frame, p.idAt, p.at = c.protocol().publishFrame(name, act.qos, act.retain, payload)
		return p
	}
	var p *publication
	if act.sizes == nil {
		p = build(act.size)
	} else {
		p = &publication{st: st, rnd: uint64(s.u.ID)*0x9e3779b97f4a7c15 + uint64(act.index) + 1}
		for _, size := range act.sizes {
			p.levels = append(p.levels, build(size))
		}
	}
	s.pubs[act.index] = p
	return p
}
