package pubsub

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	target "github.com/throng-io/throng/internal/targets/pubsub"
)

// recorder is a driver.Sink that counts events by action and class.
type recorder struct {
	mu     sync.Mutex
	ok     [7]int
	errs   [7]map[driver.Class]int
	msgs   []string
	last   map[[2]int]string // the last message of each event and class
	maxLat time.Duration
}

func (r *recorder) Event(ev int, _ time.Time, lat time.Duration, bytes, _ int64, class driver.Class, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if class == driver.OK {
		r.ok[ev]++
		r.maxLat = max(r.maxLat, lat)
		return
	}
	if r.errs[ev] == nil {
		r.errs[ev] = map[driver.Class]int{}
	}
	r.errs[ev][class]++
	if err != nil && len(r.msgs) < 10 {
		r.msgs = append(r.msgs, err.Error())
	}
	if err != nil {
		if r.last == nil {
			r.last = map[[2]int]string{}
		}
		r.last[[2]int{ev, int(class)}] = err.Error()
	}
}

// message is the last message of event ev in class.
func (r *recorder) message(ev int, class driver.Class) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[[2]int{ev, int(class)}]
}

func (r *recorder) count(ev int, class driver.Class) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if class == driver.OK {
		return r.ok[ev]
	}
	return r.errs[ev][class]
}

// brokers starts the embedded NATS and MQTT brokers for a test.
func brokers(t *testing.T, o target.Options) *target.Both {
	t.Helper()
	b, err := target.StartBoth("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// setup decodes a scenario whose groups are "subscribers" (passive) and
// "publishers" (one action each), with the pubsub block given, against
// target, and compiles its actions.
func setup(t *testing.T, block, target string, actions ...string) (*Config, []driver.Action) {
	t.Helper()
	src := "phases: {steady: 1s}\ngroups:\n  - {name: subscribers, users: 1}\n  - name: publishers\n    users: 1\n    model: open\n    actions:\n"
	if len(actions) == 0 {
		actions = []string{"{name: publish, rate: 1/s}"}
	}
	for _, a := range actions {
		src += "      - " + a + "\n"
	}
	src += "pubsub: " + block + "\n"
	s, err := scenario.Decode("test.yaml", []byte(src), []string{Name})
	if err != nil {
		t.Fatalf("scenario: %v\n%s", err, src)
	}
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		t.Fatalf("Decode: %v", errs)
	}
	var acts []driver.Action
	for _, a := range s.Actions {
		ca, errs := c.Compile(a)
		if len(errs) > 0 {
			t.Fatalf("Compile: %v", errs)
		}
		acts = append(acts, ca)
	}
	return c, acts
}

// openAll opens n users of group with IDs from first, concurrently.
func openAll(t *testing.T, c *Config, group string, first, n int) []driver.Session {
	t.Helper()
	ss := make([]driver.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ss[i], errs[i] = c.Open(t.Context(), driver.User{ID: first + i, Group: group})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %s %d: %v", group, first+i, err)
		}
	}
	return ss
}

// publishAll makes every publisher do its action count times, interleaved.
func publishAll(t *testing.T, pubs []driver.Session, a driver.Action, count int) {
	t.Helper()
	for range count {
		for _, p := range pubs {
			if _, err := p.Do(t.Context(), a); err != nil {
				t.Fatalf("publish: %v", err)
			}
		}
	}
}

func closeAll(ss []driver.Session) {
	for _, s := range ss {
		s.Close()
	}
}

func drain(t *testing.T, c *Config, bound time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	t0 := time.Now()
	if err := c.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return time.Since(t0)
}

// proxy forwards TCP connections to a server, and breaks them as a test
// asks: pause stops the server's bytes (kept, never delivered); silence
// stops every byte both ways on the connections open now and closes
// nothing (links that died without a word; new connections work); refuse
// closes new connections at once (a server that is away); cut closes
// every connection (a server that cut them). A close on either side is
// passed on, unless silenced.
type proxy struct {
	ln       net.Listener
	to       string
	mu       sync.Mutex
	paused   bool
	refusing bool
	links    []*link
}

// link is one forwarded connection.
type link struct {
	c, s   net.Conn
	silent bool
}

func newProxy(t *testing.T, to string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, to: to}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.mu.Unlock()
		if refusing {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		l := &link{c: c, s: s}
		p.mu.Lock()
		p.links = append(p.links, l)
		p.mu.Unlock()
		go p.pipe(l, s, c, false)
		go p.pipe(l, c, s, true)
	}
}

// pipe copies src to dst; fromServer says which way.
func (p *proxy) pipe(l *link, dst, src net.Conn, fromServer bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		drop := l.silent || (fromServer && p.paused)
		silent := l.silent
		p.mu.Unlock()
		if n > 0 && !drop {
			dst.Write(buf[:n])
		}
		if err != nil {
			if !silent {
				dst.Close()
				src.Close()
			}
			return
		}
	}
}

func (p *proxy) pause() { p.mu.Lock(); p.paused = true; p.mu.Unlock() }

// silence makes the connections open now drop every byte, and close
// nothing.
func (p *proxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.silent = true
	}
}

func (p *proxy) refuse(on bool) { p.mu.Lock(); p.refusing = on; p.mu.Unlock() }

// cut closes every connection; new ones are forwarded normally (unless
// refusing).
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.c.Close()
		l.s.Close()
	}
	p.links = nil
	p.paused = false
}

func urlFor(b *target.Both, proto string) string {
	if proto == NATS {
		return b.NATS.URL()
	}
	return b.MQTT.URL()
}

var _ = fmt.Sprint

func classOf(err error) string { return driver.Classify(err).String() }
