package pubsub

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/textfmt"
)

// In a distributed run (segments k/n with n > 1: agents, or processes
// started with --segment), a subscriber in one process is owed the
// messages of every publisher of the plan, wherever it runs. Stream names
// are global (publisher's user ID and subject), so a message is
// recognised everywhere; what a process cannot see is another's counts:
// how many a stream had published when a subscription here was confirmed
// (its base) and how many it published in all (its last). The processes
// tell each other over the broker itself, on a control subject of the run
// (throng-ctl.<run>, throng-ctl/<run>) that every process subscribes to
// with one connection of its own:
//
//   - PROBE(k, p): segment k had subscriptions confirmed; p numbers the
//     probe. Sent when a subscription is confirmed (at most every 20 ms),
//     and again every 200 ms while some are not resolved.
//   - COUNTS(j, seen, streams): segment j's streams and their counts, read
//     after it saw, of each segment, the probe numbered seen[k]. Sent when
//     a probe arrives (at most every 20 ms), every second, and, once its
//     users have stopped (the drain), as FINAL every 200 ms.
//
// A subscription confirmed before probe p was sent is resolved when every
// other segment has answered with counts that saw p: each stream of theirs
// is owed to it above the count they gave (read after the probe, so after
// the broker had the subscription: nothing numbered above it can have been
// published before), and a stream they did not list began later and is
// owed from its first number. Messages of another segment's stream that
// arrive before then are held provisionally (track.pending). The drain
// waits for every other segment's FINAL before settling, so every
// subscriber is settled against the final count of every stream of the
// plan: a message lost between two machines is counted lost exactly once,
// by the subscriber's own process.

// control is a distributed run's connection to its control subject.
type control struct {
	r       *run
	k, n    int // this segment, of n
	subject string

	mu        sync.Mutex
	nextProbe uint64    // the number the next probe carries (from 1)
	fresh     bool      // a subscription awaits the next probe
	probeAt   time.Time // when the last probe went
	pend      []*subscription
	seen      []uint64 // seen[j]: the highest probe of segment j+1 seen here
	answered  []uint64 // answered[j]: the highest probe of ours segment j+1's counts saw
	final     []bool   // final[j]: segment j+1 announced its final counts
	acked     []bool   // acked[j]: segment j+1 has this one's final counts
	ending    bool     // this segment's users stopped: its counts are final
	due       bool     // counts are due (a probe arrived)
	countsAt  time.Time
	gen       uint32
	parts     map[int]*countsParts // counts being assembled, by segment

	kick     chan struct{}
	quit     chan struct{}
	finished chan struct{}
	once     sync.Once

	wmu sync.Mutex
	nc  net.Conn // the connection now, nil while it is being made
}

// countsParts assembles one generation of a segment's counts sent in
// several messages.
type countsParts struct {
	gen     uint32
	got     []bool
	entries []countEntry
	seen    []uint64
	final   bool // they are final
	has     bool // the sender has this segment's final counts
}

type countEntry struct {
	key  streamKey
	sent uint64
}

const (
	probeEvery    = 20 * time.Millisecond  // at most one probe (and one answer) per
	probeAgain    = 200 * time.Millisecond // a probe not answered is sent again after
	countsEvery   = time.Second            // counts are announced at least this often
	finalEvery    = 200 * time.Millisecond // final counts are announced this often
	countsPerPart = 4096                   // stream counts per message (64 KiB)
)

func newControl(r *run, k, n int) *control {
	return &control{r: r, k: k, n: n, subject: r.c.protocol().control(r.id), nextProbe: 1, fresh: true,
		seen: make([]uint64, n), answered: make([]uint64, n), final: make([]bool, n), acked: make([]bool, n), parts: map[int]*countsParts{},
		kick: make(chan struct{}, 1), quit: make(chan struct{}), finished: make(chan struct{})}
}

// start connects and keeps the control connection until stop.
func (c *control) start() { go c.loop() }

// stop ends the control connection, after the final counts are sent
// once more (when they are final) and the broker has them.
func (c *control) stop() {
	c.once.Do(func() { close(c.quit) })
	<-c.finished
}

func (c *control) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// meet waits (at most wait) until every other segment has answered a
// probe of this one: their control connections and this one's are up, and
// a subscription's probe is answered in a round trip.
func (c *control) meet(wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		met := c.answeredByAll() > 0
		c.mu.Unlock()
		if met {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-c.quit:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// probe registers a subscription confirmed now and returns the number of
// the probe that will ask the others for their counts. Call with the
// subscription's lock held.
func (c *control) probe(s *subscription) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.pend, s) {
		c.pend = append(c.pend, s)
	}
	c.fresh = true
	c.wake()
	return c.nextProbe
}

// end says that this segment's users have stopped: its counts are final
// from now on.
func (c *control) end() {
	c.mu.Lock()
	c.ending, c.due = true, true
	c.mu.Unlock()
	c.wake()
}

// finals reports whether every other segment announced its final counts
// to this one, and has this one's.
func (c *control) finals() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, f := range c.final {
		if j != c.k-1 && (!f || !c.acked[j]) {
			return false
		}
	}
	return true
}

// loop makes the connection (again, with back-off, when it breaks), and
// sends the probes and counts as they fall due.
func (c *control) loop() {
	defer close(c.finished)
	delay := backoffMin
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		w, err := c.r.c.connect(c.r.ctx, c.r, request{user: -1, filters: []string{c.subject}, ctl: c})
		if err != nil {
			select {
			case <-c.quit:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, backoffMax)
			continue
		}
		delay = backoffMin
		c.wmu.Lock()
		c.nc = w.nc
		c.wmu.Unlock()
		done := make(chan struct{})
		go c.read(w.ep, w.nc, done)
		c.mu.Lock()
		c.due = true
		c.mu.Unlock()
	serve:
		for {
			c.send(w.nc)
			select {
			case <-c.quit:
				c.mu.Lock()
				if c.ending {
					// Once more, for a segment still waiting for them.
					c.due, c.countsAt = true, time.Time{}
				}
				c.mu.Unlock()
				c.send(w.nc)
				c.leave(w, done)
				return
			case <-done:
				break serve
			case <-c.kick:
			case <-tick.C:
			}
		}
		c.wmu.Lock()
		c.nc = nil
		c.wmu.Unlock()
		w.nc.Close()
	}
}

// leave closes the control connection cleanly, so that what was just sent
// is not lost to a reset: MQTT DISCONNECT, a half-close, and what the
// broker still sends read until it closes (at most a second).
func (c *control) leave(w *wire, done chan struct{}) {
	if bye := c.r.c.protocol().goodbye(); len(bye) > 0 {
		c.write(w.nc, bye)
	}
	if cw, ok := w.nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	w.nc.Close()
	<-done
}

// read feeds the control connection's endpoint until it breaks.
func (c *control) read(ep *endpoint, nc net.Conn, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 64<<10)
	ka := time.Duration(ep.keepAlive)
	for {
		if ka > 0 {
			nc.SetReadDeadline(time.Now().Add(ka / 2))
		}
		n, err := nc.Read(buf)
		dead := false
		ep.mu.Lock()
		if n > 0 {
			if ferr := ep.feed(buf[:n], time.Now().UnixNano()); ferr != nil {
				err = ferr
			}
		}
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() {
			dead, err = ep.keepAliveCheck(time.Now().UnixNano()), nil
		}
		out := ep.out
		ep.out = nil
		ep.mu.Unlock()
		if len(out) > 0 {
			c.write(nc, out)
		}
		if err != nil || dead {
			return
		}
	}
}

func (c *control) write(nc net.Conn, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(c.r.c.Timeout.D()))
	_, err := nc.Write(b)
	return err
}

// send writes what is due: a probe for subscriptions not resolved, this
// segment's counts.
func (c *control) send(nc net.Conn) {
	now := time.Now()
	c.mu.Lock()
	var msgs [][]byte
	// Until every other segment answered once, probe 1 is the greeting.
	need := len(c.pend) > 0 || c.answeredByAll() == 0
	if since := now.Sub(c.probeAt); need && ((c.fresh && since >= probeEvery) || since >= probeAgain) {
		msgs = append(msgs, c.frame(probeMessage(c.k, c.nextProbe)))
		c.nextProbe++
		c.probeAt, c.fresh = now, false
	}
	every := countsEvery
	if c.ending {
		every = finalEvery
	}
	if (c.due && now.Sub(c.countsAt) >= probeEvery) || now.Sub(c.countsAt) >= every {
		c.gen++
		for _, m := range c.countsMessages() {
			msgs = append(msgs, c.frame(m))
		}
		c.due, c.countsAt = false, now
	}
	c.mu.Unlock()
	for _, m := range msgs {
		if c.write(nc, m) != nil {
			return
		}
	}
}

// answeredByAll is the highest probe every other segment answered. Call
// with mu held.
func (c *control) answeredByAll() uint64 {
	low := ^uint64(0)
	for j, a := range c.answered {
		if j != c.k-1 {
			low = min(low, a)
		}
	}
	return low
}

// frame wraps a control message for the protocol.
func (c *control) frame(payload []byte) []byte {
	f, _, _ := c.r.c.protocol().publishFrame(c.subject, 0, false, payload)
	return f
}

// The messages, little endian:
//
//	PROBE   "thrP" from:u16 probe:u64
//	COUNTS  "thrC" from:u16 final:u8 n:u16 gen:u32 part:u16 parts:u16
//	        seen:n×u64 have:n×u8 count:u32 count×(stream:u64 sent:u64)
//
// have[j] is 1 when the sender has segment j+1's final counts.
var (
	probeMagic  = [4]byte{'t', 'h', 'r', 'P'}
	countsMagic = [4]byte{'t', 'h', 'r', 'C'}
)

func probeMessage(from int, probe uint64) []byte {
	b := append([]byte(nil), probeMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(from))
	return binary.LittleEndian.AppendUint64(b, probe)
}

// countsMessages returns this segment's counts, in parts: the local
// streams' counts are read now, after every probe counted in seen. Call
// with mu held.
func (c *control) countsMessages() [][]byte {
	var entries []countEntry
	for _, st := range c.r.reg.all() {
		if st.local {
			entries = append(entries, countEntry{st.key, st.sent.Load()})
		}
	}
	parts := max(1, (len(entries)+countsPerPart-1)/countsPerPart)
	out := make([][]byte, 0, parts)
	for p := range parts {
		part := entries[min(len(entries), p*countsPerPart):min(len(entries), (p+1)*countsPerPart)]
		b := append([]byte(nil), countsMagic[:]...)
		b = binary.LittleEndian.AppendUint16(b, uint16(c.k))
		final := byte(0)
		if c.ending {
			final = 1
		}
		b = append(b, final)
		b = binary.LittleEndian.AppendUint16(b, uint16(c.n))
		b = binary.LittleEndian.AppendUint32(b, c.gen)
		b = binary.LittleEndian.AppendUint16(b, uint16(p))
		b = binary.LittleEndian.AppendUint16(b, uint16(parts))
		for _, s := range c.seen {
			b = binary.LittleEndian.AppendUint64(b, s)
		}
		for _, f := range c.final {
			b = append(b, map[bool]byte{false: 0, true: 1}[f])
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(part)))
		for _, e := range part {
			b = binary.LittleEndian.AppendUint64(b, uint64(e.key))
			b = binary.LittleEndian.AppendUint64(b, e.sent)
		}
		out = append(out, b)
	}
	return out
}

// handle decodes a message of the control subject (the reader's goroutine,
// with the control endpoint's lock held). Its own and malformed ones are
// ignored.
func (c *control) handle(p []byte) {
	if len(p) < 6 {
		return
	}
	from := int(binary.LittleEndian.Uint16(p[4:]))
	if from < 1 || from > c.n || from == c.k {
		return
	}
	switch [4]byte(p[:4]) {
	case probeMagic:
		if len(p) < 14 {
			return
		}
		probe := binary.LittleEndian.Uint64(p[6:])
		c.mu.Lock()
		if probe > c.seen[from-1] {
			c.seen[from-1], c.due = probe, true
		}
		c.mu.Unlock()
		c.wake()
	case countsMagic:
		c.counts(from, p)
	}
}

// counts takes a part of segment from's counts; a whole generation
// updates the streams, what that segment answered, and resolves the
// subscriptions it was the last to answer.
func (c *control) counts(from int, p []byte) {
	const head = 4 + 2 + 1 + 2 + 4 + 2 + 2
	if len(p) < head {
		return
	}
	final := p[6] == 1
	n := int(binary.LittleEndian.Uint16(p[7:]))
	gen := binary.LittleEndian.Uint32(p[9:])
	part := int(binary.LittleEndian.Uint16(p[13:]))
	parts := int(binary.LittleEndian.Uint16(p[15:]))
	if n != c.n || parts < 1 || part >= parts || len(p) < head+9*n+4 {
		return
	}
	seen := make([]uint64, n)
	for i := range seen {
		seen[i] = binary.LittleEndian.Uint64(p[head+8*i:])
	}
	off := head + 8*n
	has := p[off+c.k-1] == 1 // it has this segment's final counts
	off += n
	count := int(binary.LittleEndian.Uint32(p[off:]))
	off += 4
	if len(p) < off+16*count {
		return
	}
	c.mu.Lock()
	a := c.parts[from]
	if a == nil || a.gen != gen {
		a = &countsParts{gen: gen, got: make([]bool, parts)}
		c.parts[from] = a
	}
	if len(a.got) != parts || a.got[part] {
		c.mu.Unlock()
		return
	}
	a.got[part], a.final, a.has = true, a.final || final, a.has || has
	if part == 0 {
		a.seen = seen
	}
	for i := range count {
		e := p[off+16*i:]
		a.entries = append(a.entries, countEntry{streamKey(binary.LittleEndian.Uint64(e)), binary.LittleEndian.Uint64(e[8:])})
	}
	if slices.Contains(a.got, false) {
		c.mu.Unlock()
		return
	}
	delete(c.parts, from)
	c.mu.Unlock()
	// A whole generation: the counts first, then what it answered.
	for _, e := range a.entries {
		st := c.r.reg.learn(e.key)
		for {
			old := st.sent.Load()
			if e.sent <= old || st.sent.CompareAndSwap(old, e.sent) {
				break
			}
		}
	}
	c.mu.Lock()
	c.answered[from-1] = max(c.answered[from-1], a.seen[c.k-1])
	c.final[from-1] = c.final[from-1] || a.final
	c.acked[from-1] = c.acked[from-1] || (a.has && c.ending)
	answered := c.answeredByAll()
	pend := append([]*subscription(nil), c.pend...)
	c.mu.Unlock()
	var left []*subscription
	for _, s := range pend {
		s.mu.Lock()
		s.resolve(answered)
		if s.pending() {
			left = append(left, s)
		}
		s.mu.Unlock()
	}
	c.mu.Lock()
	// Keep those still pending, and any registered meanwhile.
	c.pend = slices.DeleteFunc(c.pend, func(s *subscription) bool {
		return slices.Contains(pend, s) && !slices.Contains(left, s)
	})
	c.mu.Unlock()
}

// unaccounted says what the run could not account for: segments that never
// announced their final counts (their streams are settled against the
// last counts they gave, so a loss of their last messages is not seen),
// and deliveries of streams whose segment never answered a subscription's
// probe (neither owed nor lost). nil when everything was accounted.
func (c *control) unaccounted(t tally) error {
	c.mu.Lock()
	var silent []string
	for j, f := range c.final {
		if j != c.k-1 && !f {
			silent = append(silent, strconv.Itoa(j+1))
		}
	}
	c.mu.Unlock()
	var parts []string
	if len(silent) > 0 {
		parts = append(parts, fmt.Sprintf("segment(s) %s of %d never announced their final counts: their streams are owed up to the last counts they gave",
			strings.Join(silent, ", "), c.n))
	}
	if t.Unresolved > 0 {
		parts = append(parts, fmt.Sprintf("%s deliveries of streams of another segment that never answered for them were neither owed nor counted lost",
			textfmt.Num(float64(t.Unresolved))))
	}
	if len(parts) == 0 {
		return nil
	}
	return driver.Errorf(driver.Other, errors.New("the distributed accounting is incomplete: "+strings.Join(parts, "; ")))
}
