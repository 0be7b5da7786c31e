package netloop

import (
	"errors"
	"syscall"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/throng-io/throng/internal/driver"
)

// This file is HTTP/2 with prior knowledge (h2c, RFC 9113) for the static
// storm: a thread's users are dealt, Config.H2Streams at a time, to
// sessions, each one connection whose socket the session's first conn (its
// leader) holds for the I/O layer; a user's exchange is a stream on it.
// The scheduler is the HTTP/1.1 one: an exchange starts, is timed and
// recorded as there; only the connection is shared.
//
// Requests are the driver's header blocks, sent as is in a HEADERS frame
// that ends the stream (driver.WireH2Action: they never touch the HPACK
// dynamic table, so the same bytes serve every connection). Responses are
// framed here (a 9-byte header, then the payload: DATA is counted and
// skipped as it comes, never copied; other frames are gathered, at most
// the 16,384 bytes of the default SETTINGS_MAX_FRAME_SIZE) and their header
// blocks decoded by x/net's hpack, which keeps the dynamic table in step;
// only :status is kept (the other fields are decoded without being
// emitted, so without a string made). Everything a turn of the loop has to
// say on a connection (HEADERS, WINDOW_UPDATE, SETTINGS and PING
// acknowledgements, RST_STREAM) goes out in one write before the loop
// waits (h2Flush).
//
// Flow control: the connection's receive window is raised to h2ConnWindow
// at once; a stream's stays the default 65,535 bytes. Both are given back
// by WINDOW_UPDATE when half is used, so a body of any size flows. The
// server's SETTINGS_MAX_CONCURRENT_STREAMS caps the streams open on a
// connection (h2Unsettled until its SETTINGS came); the users beyond wait
// in the session's queue, their latency running from their schedule.
//
// The end of a connection (closed by the server, reset, a frame that
// breaks the protocol) fails the streams in flight, by class (io, or
// protocol); GOAWAY lets the streams it covers finish and the others,
// never processed, are sent again once on a new connection when
// idempotent (so is a stream refused with REFUSED_STREAM); a timed-out
// stream is reset (CANCEL) and its connection kept. Users waiting for a
// stream make the session connect again, as an HTTP/1.1 exchange does.

const (
	h2MaxFrame   = 16384   // the largest frame payload we accept (the default we keep)
	h2ConnWindow = 1 << 24 // the connection's receive window we grant
	h2Window     = 65535   // a stream's receive window (the default, kept)
	h2Unsettled  = 100     // streams open at once before the server's SETTINGS (RFC 9113 §6.5.2 recommends at least 100)
	h2MaxSeq     = 1<<30 - 1
	h2HeaderLen  = 9
)

// Session states.
const (
	h2Idle uint8 = iota // no socket
	h2Connecting
	h2Open
)

var (
	errH2Protocol = errors.New("HTTP/2: the server broke the protocol (a malformed or unexpected frame)")
	errH2Frame    = errors.New("HTTP/2: the server sent a frame larger than SETTINGS_MAX_FRAME_SIZE")
	errH2HPACK    = errors.New("HTTP/2: the server's header block does not decode (HPACK)")
	errH2Push     = errors.New("HTTP/2: the server pushed a stream although push is disabled")
	errH2NoStatus = errors.New("HTTP/2: a response without a valid :status")
	errH2GoAway   = errors.New("HTTP/2: the server sent GOAWAY before processing the stream")
	errH2Refused  = errors.New("HTTP/2: the server refused the stream (REFUSED_STREAM)")
)

// h2ResetErrs are the sample errors of a stream reset by the server, by
// error code.
var h2ResetErrs = func() (e [14]error) {
	for code := range e {
		e[code] = errors.New("HTTP/2: the server reset the stream: " + http2.ErrCode(code).String())
	}
	return e
}()

func h2ResetErr(code uint32) error {
	if code < uint32(len(h2ResetErrs)) {
		return h2ResetErrs[code]
	}
	return h2ResetErrs[http2.ErrCodeInternal]
}

// h2Hello is what a connection says first: the preface, SETTINGS (push
// disabled), and a WINDOW_UPDATE raising the connection's window.
var h2Hello = func() []byte {
	b := []byte(http2.ClientPreface)
	b = h2Frame(b, 6, http2.FrameSettings, 0, 0)
	b = append(b, 0, byte(http2.SettingEnablePush), 0, 0, 0, 0)
	return h2WindowUpdate(b, 0, h2ConnWindow-h2Window)
}()

// h2loop is a loop thread's HTTP/2 state: its sessions.
type h2loop struct {
	streams int // users per connection
	busy    int // sessions with streams open
	sess    []h2sess
	dirty   []int32 // sessions with frames to write
}

// h2sess is one connection shared by up to streams users.
type h2sess struct {
	idx    int32
	leader int32 // the conn holding the socket
	live   int   // members that have not left
	state  uint8

	settings   bool   // the server's SETTINGS came
	maxStreams uint32 // its SETTINGS_MAX_CONCURRENT_STREAMS (0 in settings: none at all)
	goaway     bool   // no new stream on this connection
	active     int    // streams open
	seq        uint32 // the next stream is 2*seq+1
	ids        []int32
	mask       uint32
	queue      ring // members waiting for a stream

	// Reading.
	dec       *hpack.Decoder
	status    int // :status of the header block being decoded
	hdr       [h2HeaderLen]byte
	hn        int
	inFrame   bool
	fType     http2.FrameType
	fFlags    http2.Flags
	fStream   uint32
	fLen      int
	need      int
	pay       []byte
	block     uint32 // stream of the header block being decoded
	cont      bool   // a CONTINUATION must come next
	endStream bool   // the block's HEADERS ended the stream
	unacked   int    // connection: DATA bytes not given back yet

	// Writing: frames gather in wbuf; wire is with the I/O layer.
	wbuf, wire []byte
	writing    bool
	dirty      bool
}

func newH2Loop(l *loop, streams int) *h2loop {
	h := &h2loop{streams: streams}
	n := (len(l.conns) + streams - 1) / streams
	h.sess = make([]h2sess, n)
	size := pow2(2 * streams)
	for i := range h.sess {
		s := &h.sess[i]
		first := i * streams
		members := min(streams, len(l.conns)-first)
		*s = h2sess{idx: int32(i), leader: int32(first), live: members, ids: make([]int32, size), mask: uint32(size - 1), queue: newRing(members)}
		for k := range s.ids {
			s.ids[k] = -1
		}
		for k := first; k < first+members; k++ {
			l.conns[k].sess = int32(i)
		}
	}
	return h
}

func (l *loop) sessOf(c *conn) *h2sess { return &l.h2.sess[c.sess] }

// h2Frame appends a frame header.
func h2Frame(b []byte, n int, t http2.FrameType, f http2.Flags, stream uint32) []byte {
	return append(b, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(f), byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

func h2WindowUpdate(b []byte, stream uint32, n int) []byte {
	b = h2Frame(b, 4, http2.FrameWindowUpdate, 0, stream)
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// --- the users' side

// h2Start queues c's exchange (begun by startExchange) for a stream.
func (l *loop) h2Start(c *conn) {
	s := l.sessOf(c)
	c.h2q = true
	s.queue.push(c.idx)
	l.h2Pump(s)
}

// h2Pump opens streams for the queued users while the server allows, and
// connects when users wait and there is no connection. A connection past
// GOAWAY (or out of stream ids) is closed once its streams are done.
func (l *loop) h2Pump(s *h2sess) {
	lead := &l.conns[s.leader]
	if s.state == h2Open && (s.goaway || s.seq >= h2MaxSeq) && s.active == 0 {
		l.h2Close(s, driver.IO, errClosedMid) // nothing in flight
		return                                // h2Close pumps again
	}
	if s.queue.n == 0 {
		return
	}
	if lead.fd < 0 {
		l.h2Dial(s)
		return
	}
	if s.state != h2Open || s.goaway {
		return
	}
	limit := l.h2.streams
	switch {
	case !s.settings:
		limit = min(limit, h2Unsettled)
	case s.maxStreams < uint32(limit):
		limit = int(s.maxStreams)
	}
	for s.queue.n > 0 && s.active < limit && s.seq < h2MaxSeq {
		c := &l.conns[s.queue.pop()]
		c.h2q = false
		l.h2Open(s, c)
	}
}

// h2Open sends c's request on a new stream.
func (l *loop) h2Open(s *h2sess, c *conn) {
	for s.ids[s.seq&s.mask] >= 0 {
		s.seq++ // a slot still held by a long stream: skip its id
	}
	s.ids[s.seq&s.mask] = c.idx
	c.stream = 2*s.seq + 1
	s.seq++
	c.h2status, c.unacked = 0, 0
	if s.active++; s.active == 1 {
		l.h2.busy++
	}
	block := l.cfg.H2Headers[c.action]
	s.wbuf = h2Frame(s.wbuf, len(block), http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, c.stream)
	s.wbuf = append(s.wbuf, block...)
	c.bytesOut += int64(h2HeaderLen + len(block))
	l.h2Dirty(s)
}

// h2Member returns the user whose stream id is, or nil (a stream reset
// since, or never ours).
func (l *loop) h2Member(s *h2sess, id uint32) *conn {
	if id&1 == 0 {
		return nil
	}
	i := s.ids[(id>>1)&s.mask]
	if i < 0 || l.conns[i].stream != id {
		return nil
	}
	return &l.conns[i]
}

// h2Unmap ends c's stream on s.
func (l *loop) h2Unmap(s *h2sess, c *conn) {
	s.ids[(c.stream>>1)&s.mask] = -1
	c.stream = 0
	if s.active--; s.active == 0 {
		l.h2.busy--
	}
}

// h2End records c's whole response.
func (l *loop) h2End(s *h2sess, c *conn) {
	l.h2Unmap(s, c)
	class, err := driver.Protocol, errH2NoStatus
	if c.h2status >= 200 {
		class, err = l.cfg.Status(int(c.h2status))
	}
	l.finish(c, class, err)
	l.h2Pump(s)
}

// h2Retry sends c's request again on a new stream when it was never
// processed and may be sent twice; otherwise it fails in class io.
func (l *loop) h2Retry(s *h2sess, c *conn, err error) {
	if !c.retried && int(c.action) < len(l.cfg.Idempotent) && l.cfg.Idempotent[c.action] {
		c.retried = true
		c.h2q = true
		s.queue.push(c.idx)
		return
	}
	l.finish(c, driver.IO, err)
}

// h2Cancel ends c's exchange, past its deadline: its stream is reset, or
// it leaves the queue. A connect nobody waits for any more is given up.
func (l *loop) h2Cancel(c *conn) {
	s := l.sessOf(c)
	switch {
	case c.stream != 0:
		s.wbuf = h2Frame(s.wbuf, 4, http2.FrameRSTStream, 0, c.stream)
		s.wbuf = append(s.wbuf, 0, 0, 0, byte(http2.ErrCodeCancel))
		l.h2Unmap(s, c)
		l.h2Dirty(s)
	case c.h2q:
		c.h2q = false
		s.queue.remove(c.idx)
	}
	if s.state == h2Connecting && s.queue.n == 0 {
		l.closeConn(&l.conns[s.leader])
		l.h2Reset(s)
	}
}

// h2Leave is a user leaving: the last one closes the connection.
func (l *loop) h2Leave(c *conn) {
	s := l.sessOf(c)
	s.live--
	if s.live == 0 {
		l.closeConn(&l.conns[s.leader])
		l.h2Reset(s)
	}
}

// --- the connection

// h2Dial connects s.
func (l *loop) h2Dial(s *h2sess) {
	lead := &l.conns[s.leader]
	l.h2Reset(s)
	up, err := l.io.dial(lead)
	if lead.fd >= 0 {
		l.h.ConnOpened()
	}
	if err != 0 {
		l.h2Close(s, driver.Dial, err)
		return
	}
	s.dec = hpack.NewDecoder(4096, s.emit)
	s.dec.SetMaxStringLength(h2MaxFrame * 4)
	if up {
		l.h2Connected(lead, 0)
		return
	}
	lead.connecting = true
	s.state = h2Connecting
}

// emit keeps a header block's :status, the first field of a response's;
// the fields after it are decoded without being emitted.
func (s *h2sess) emit(f hpack.HeaderField) {
	s.dec.SetEmitEnabled(false)
	if f.Name != ":status" || len(f.Value) != 3 {
		return
	}
	v := 0
	for i := range 3 {
		d := f.Value[i]
		if d < '0' || d > '9' {
			return
		}
		v = v*10 + int(d-'0')
	}
	s.status = v
}

// h2Connected is the outcome of the leader's connect.
func (l *loop) h2Connected(lead *conn, err syscall.Errno) {
	s := l.sessOf(lead)
	lead.connecting = false
	if err != 0 {
		l.h2Close(s, driver.Dial, err)
		return
	}
	s.state = h2Open
	s.wbuf = append(s.wbuf, h2Hello...)
	l.h2Dirty(s)
	l.h2Pump(s)
}

// h2Reset forgets a connection's protocol state (the socket is gone or
// about to be made).
func (l *loop) h2Reset(s *h2sess) {
	s.state = h2Idle
	s.settings, s.goaway = false, false
	s.maxStreams, s.seq = 0, 0
	s.hn, s.inFrame, s.cont, s.unacked = 0, false, false, 0
	s.pay = s.pay[:0]
	s.wbuf = s.wbuf[:0]
	s.writing = false
}

// h2Close ends s's connection: the streams in flight fail in class (after
// a failed connect, the users waiting for it too); users still waiting
// make it connect again.
func (l *loop) h2Close(s *h2sess, class driver.Class, err error) {
	l.depth++ // users move on at the next turn: no recursion
	l.closeConn(&l.conns[s.leader])
	l.h2Reset(s)
	if s.active > 0 {
		for i, m := range s.ids {
			if m < 0 {
				continue
			}
			s.ids[i] = -1
			c := &l.conns[m]
			c.stream = 0
			l.finish(c, class, err)
		}
		s.active = 0
		l.h2.busy--
	}
	if class == driver.Dial {
		for s.queue.n > 0 {
			c := &l.conns[s.queue.pop()]
			c.h2q = false
			l.finish(c, class, err)
		}
	}
	l.depth--
	if s.queue.n > 0 {
		l.h2Dial(s)
	}
}

// h2Broken is the end of a session's socket, reported by the I/O layer.
func (l *loop) h2Broken(lead *conn, err syscall.Errno) {
	s := l.sessOf(lead)
	if err == 0 {
		l.h2Close(s, driver.IO, errClosedMid)
		return
	}
	l.h2Close(s, driver.IO, err)
}

// h2Fail closes a connection whose server broke the protocol.
func (l *loop) h2Fail(s *h2sess, err error) { l.h2Close(s, driver.Protocol, err) }

func (l *loop) h2Dirty(s *h2sess) {
	if !s.dirty {
		s.dirty = true
		l.h2.dirty = append(l.h2.dirty, s.idx)
	}
}

// h2Flush writes the frames each connection gathered since the last turn.
func (l *loop) h2Flush() {
	for _, i := range l.h2.dirty {
		s := &l.h2.sess[i]
		s.dirty = false
		l.h2Write(s)
	}
	l.h2.dirty = l.h2.dirty[:0]
}

// h2Write hands s's gathered frames to the I/O layer, unless a write is
// still with it (written sends them when it returns).
func (l *loop) h2Write(s *h2sess) {
	lead := &l.conns[s.leader]
	if s.writing || len(s.wbuf) == 0 || lead.fd < 0 || s.state != h2Open {
		return
	}
	s.wbuf, s.wire = s.wire[:0], s.wbuf
	done, err := l.io.write(lead, s.wire)
	if err != 0 {
		l.h2Broken(lead, err)
		return
	}
	s.writing = !done
}

// written is the I/O layer's report that a write is all sent.
func (l *loop) written(c *conn) {
	if l.h2 == nil {
		return
	}
	s := l.sessOf(c)
	s.writing = false
	l.h2Write(s)
}

// remove takes i out of the queue (a user whose exchange timed out while
// it waited): rare, so a scan.
func (r *ring) remove(i int32) {
	n := r.n
	for k := 0; k < n; k++ {
		v := r.pop()
		if v != i {
			r.push(v)
		}
	}
}
