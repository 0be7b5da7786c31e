package pubsub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
	"github.com/throng-io/throng/internal/testenv"
)

// A broker under test that a test can kill and start again on its port.
type faultBroker struct {
	name, proto, url string
	kill             func(t *testing.T) // kill now, start again after 300 ms
}

// faultBrokers are the real nats-server and mosquitto (SIGKILL, then a new
// process on the same port) and the embedded brokers (closed, then started
// again on the same address).
func faultBrokers(t *testing.T) []faultBroker {
	var out []faultBroker
	for _, srv := range realBrokers {
		b := srv.start(t)
		out = append(out, faultBroker{srv.name, srv.proto, b.URL, func(t *testing.T) {
			if err := b.Kill(t.Context(), 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}})
	}
	eb := brokers(t, target.Options{})
	out = append(out,
		faultBroker{"embedded/nats", NATS, eb.NATS.URL(), func(t *testing.T) {
			addr := eb.NATS.Addr()
			eb.NATS.Close()
			time.Sleep(300 * time.Millisecond)
			var err error
			if eb.NATS, err = target.StartNATS(addr, target.Options{}); err != nil {
				t.Fatal(err)
			}
		}},
		faultBroker{"embedded/mqtt", MQTT, eb.MQTT.URL(), func(t *testing.T) {
			addr := eb.MQTT.Addr()
			eb.MQTT.Close()
			time.Sleep(300 * time.Millisecond)
			var err error
			if eb.MQTT, err = target.StartMQTT(addr, target.Options{}); err != nil {
				t.Fatal(err)
			}
		}})
	return out
}

// hostOf is a broker URL's host:port.
func hostOf(url string) string { _, h, _ := strings.Cut(url, "://"); return h }

// viaProxy opens user id of group in c's run, its connection going
// through px.
func viaProxy(t *testing.T, c *Config, block string, px *proxy, id int, group string) driver.Session {
	t.Helper()
	scheme, _, _ := strings.Cut(c.target, "://")
	p, _ := setup(t, block, scheme+"://"+px.addr())
	p.cur.Store(c.cur.Load())
	p.proto = c.proto
	s, err := p.Open(t.Context(), driver.User{ID: id, Group: group})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBrokerKilled kills the broker mid-run and starts it again: every
// connection breaks and is counted, and reconnects. Two of six subscribers
// reach the broker through a proxy that refuses them until the test lets
// them in again, so that while they are away the publisher, back already,
// publishes 15 messages they are owed and miss. The truth, message by
// message: 6 subscribers x 45 published = 270 owed; 240 delivered, none
// lost while connected, 30 missed while disconnected in the run's one
// outage; loss (both kinds) is 30, not 0.
func TestBrokerKilled(t *testing.T) {
	for _, fb := range faultBrokers(t) {
		t.Run(fb.name, func(t *testing.T) {
			block := fmt.Sprintf("{protocol: %s, subjects: 1, drain_idle: 500ms, timeout: 2s, keepalive: 60s}", fb.proto)
			c, acts := setup(t, block, fb.url)
			px := newProxy(t, hostOf(fb.url))
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			ss := openAll(t, c, "subscribers", 0, 4)
			ss = append(ss, viaProxy(t, c, block, px, 4, "subscribers"), viaProxy(t, c, block, px, 5, "subscribers"))
			ps := openAll(t, c, "publishers", 6, 1)
			delivered := func(n uint64) { t.Helper(); waitFor(t, func() bool { return r.stats.delivered.Load() == n }) }
			publishAll(t, ps, acts[0], 20)
			delivered(6 * 20)
			px.refuse(true)
			fb.kill(t)
			waitFor(t, func() bool { return r.stats.disconnects.Load() == 7 && r.stats.connected.Load() == 5 })
			publishAll(t, ps, acts[0], 15) // the two behind the proxy are away
			delivered(6*20 + 4*15)
			px.refuse(false)
			waitFor(t, func() bool { return r.stats.connected.Load() == 7 })
			publishAll(t, ps, acts[0], 10)
			delivered(6*20 + 4*15 + 6*10)
			closeAll(ps)
			closeAll(ss)
			drain(t, c, 10*time.Second)
			tl, _ := c.Final()
			if want := (tally{Expected: 270, Received: 240, Lost: 30, Missed: 30}); tally(tl) != want {
				t.Errorf("Final() = %+v, want %+v", tl, want)
			}
			got, lost, missed := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost), rec.count(evMissed, driver.Lost)
			if got != 240 || lost != 0 || missed != 30 {
				t.Errorf("delivered %d, lost while connected %d, missed while disconnected %d; want 240, 0, 30 (%v)", got, lost, missed, rec.msgs)
			}
			if broke, outages := rec.count(evConnect, driver.IO), rec.count(evOutage, driver.OK); broke != 7 || outages != 1 {
				t.Errorf("%d connections counted broken, %d outages; want 7 and 1 (%v)", broke, outages, rec.msgs)
			}
			if msg := rec.message(evMissed, driver.Lost); !strings.Contains(msg, "7 connections broken): 30") {
				t.Errorf("the missed deliveries are not attributed to the outage: %s", msg)
			}
		})
	}
}

// TestDeadConnection: a connection that dies without a word (the proxy
// drops every byte both ways and closes nothing) is found by the
// keep-alive within its bound, counted (class timeout, a dead
// connection), and reconnected; what its subscriber was owed while it was
// dead is missed while disconnected, exactly. Both readers: a passive
// subscriber (an epoll loop) and a user that also acts (its own
// goroutine). Truth: the proxied user is owed 25, receives 15, misses the
// 10 published while its connection was dead; the two others receive 25.
func TestDeadConnection(t *testing.T) {
	const keepalive = 2 * time.Second
	for _, srv := range realBrokers[:2] {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			for _, group := range []string{"subscribers", "publishers"} {
				t.Run(group, func(t *testing.T) {
					block := fmt.Sprintf("{protocol: %s, subjects: 1, drain_idle: 500ms, keepalive: %s, subscribe: {subscribers: one, publishers: all}}", srv.proto, keepalive)
					c, acts := setup(t, block, b.URL)
					px := newProxy(t, hostOf(b.URL))
					rec := &recorder{}
					c.Observe(rec)
					r := c.cur.Load()
					ss := openAll(t, c, "subscribers", 0, 2)
					ss = append(ss, viaProxy(t, c, block, px, 2, group))
					pub, err := setupPublisher(t, c)
					if err != nil {
						t.Fatal(err)
					}
					ps := []driver.Session{pub}
					delivered := func(n uint64) { t.Helper(); waitFor(t, func() bool { return r.stats.delivered.Load() == n }) }
					publishAll(t, ps, acts[0], 10)
					delivered(3 * 10)
					px.silence()
					t0 := time.Now()
					publishAll(t, ps, acts[0], 10) // the proxied one's connection is dead
					delivered(3*10 + 2*10)
					waitFor(t, func() bool { return r.stats.dead.Load() == 1 })
					if took := time.Since(t0); took > keepalive+1500*time.Millisecond {
						t.Errorf("the dead connection was found after %s, want within the keep-alive (%s) and the readers' tick", took, keepalive)
					}
					waitFor(t, func() bool { return r.stats.connected.Load() == 4 })
					publishAll(t, ps, acts[0], 5)
					delivered(3*10 + 2*10 + 3*5)
					closeAll(ps)
					closeAll(ss)
					drain(t, c, 10*time.Second)
					tl, _ := c.Final()
					if want := (tally{Expected: 75, Received: 65, Lost: 10, Missed: 10}); tally(tl) != want {
						t.Errorf("Final() = %+v, want %+v (%v)", tl, want, rec.msgs)
					}
					if n, dead := rec.count(evConnect, driver.Timeout), r.stats.dead.Load(); n != 1 || dead != 1 {
						t.Errorf("%d connections lost for a timeout, %d found dead; want 1 and 1 (%v)", n, dead, rec.msgs)
					}
				})
			}
		})
	}
}

// setupPublisher opens the publisher (user 9, group publishers) of c's run
// straight to the broker, with no subscription of its own.
func setupPublisher(t *testing.T, c *Config) (driver.Session, error) {
	t.Helper()
	r := c.cur.Load()
	s := &session{c: c, r: r, u: driver.User{ID: 9, Group: "publishers"}, rq: request{user: 9}, ctx: t.Context()}
	if err := s.dial(t.Context()); err != nil {
		return nil, err
	}
	return s, nil
}

// TestSlowConsumerNATSServer: the Debian nats-server (max_pending 64 KB,
// write_deadline 1 s, monitoring on) cuts off a subscriber that stops
// reading (its loop blocked; v2.9 stalls the publisher meanwhile, hence
// the long publish timeout). The driver
// notices the cut, reads its reason from /connz, counts it as a slow
// consumer exactly as often as the server's own /varz counter says, and
// reconnects; what the subscriber was owed while away is missed while
// disconnected (all of its loss), and nothing is lost while connected.
func TestSlowConsumerNATSServer(t *testing.T) {
	b := testenv.NATSServer(t, testenv.NATSServerOptions{MaxPending: 64 << 10, WriteDeadline: time.Second, Monitor: true})
	c, acts := setup(t, "{subjects: 1, readers: 2, drain_idle: 300ms, keepalive: 60s, timeout: 60s, monitor: "+b.MonitorURL+"}", b.URL, "{name: publish, rate: 1/s, size: 8KB}")
	rec := &recorder{}
	c.Observe(rec)
	r := c.cur.Load()
	serverCut := func() int64 {
		resp, err := http.Get(b.MonitorURL + "/varz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			SlowConsumers int64 `json:"slow_consumers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.SlowConsumers
	}
	ss := openAll(t, c, "subscribers", 0, 2)
	ps := openAll(t, c, "publishers", 2, 1)
	r.mu.Lock()
	slow := r.subs[0]
	r.mu.Unlock()
	slow.mu.Lock()                   // its loop stops reading it
	publishAll(t, ps, acts[0], 1500) // 12 MB: past the socket buffers and 64 KB pending
	waitFor(t, func() bool { return serverCut() > 0 })
	slow.mu.Unlock()
	waitFor(t, func() bool { return r.stats.slow.Load() >= 1 })
	waitFor(t, func() bool { return r.stats.connected.Load() == 3 }) // reconnected
	closeAll(ps)
	closeAll(ss)
	drain(t, c, 5*time.Second)
	tl, _ := c.Final()
	cut := serverCut()
	if cut != int64(r.stats.slow.Load()) || rec.count(evSlowConsumer, driver.OK) != int(cut) {
		t.Errorf("the server cut %d slow consumers off, the driver counted %d (%d events)", cut, r.stats.slow.Load(), rec.count(evSlowConsumer, driver.OK))
	}
	if tl.Lost == 0 || tl.Missed != tl.Lost || tl.Expected != tl.Received+tl.Lost || (cut == 1 && rec.count(evDeliver, driver.OK) < 1500) {
		t.Errorf("Final() = %+v, delivered %d, %d cut off: the slow one missed what it was owed while away, the other nothing", tl, rec.count(evDeliver, driver.OK), cut)
	}
	if !strings.Contains(strings.Join(rec.msgs, "\n"), "slow consumer cut off by the server") {
		t.Errorf("messages %v", rec.msgs)
	}
}
