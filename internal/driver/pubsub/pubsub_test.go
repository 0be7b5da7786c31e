package pubsub

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
	"github.com/throng-io/throng/internal/testenv"
)

// TestDeliveries runs publishers and subscribers against the embedded
// brokers, with every protocol and QoS: each subscriber gets every message
// of its subject once, in order, and the drain finds nothing lost.
func TestDeliveries(t *testing.T) {
	b := brokers(t, target.Options{})
	tests := []struct {
		proto string
		qos   int
		mode  string // subscribers' subscription
	}{
		{NATS, 0, SubOne}, {NATS, 0, SubWildcard}, {NATS, 0, SubAll},
		{MQTT, 0, SubOne}, {MQTT, 1, SubOne}, {MQTT, 2, SubOne}, {MQTT, 1, SubWildcard},
		{MQTT5, 0, SubOne}, {MQTT5, 2, SubAll},
	}
	const subs, pubs, msgs, subjects = 12, 3, 50, 3
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/qos%d/%s", tt.proto, tt.qos, tt.mode), func(t *testing.T) {
			c, acts := setup(t, fmt.Sprintf("{protocol: %s, qos: %d, subjects: %d, subscribe: {subscribers: %s}}", tt.proto, tt.qos, subjects, tt.mode), urlFor(b, tt.proto))
			rec := &recorder{}
			c.Observe(rec)
			ss := openAll(t, c, "subscribers", 0, subs)
			ps := openAll(t, c, "publishers", subs, pubs)
			publishAll(t, ps, acts[0], msgs)
			closeAll(ps)
			closeAll(ss)
			drain(t, c, 10*time.Second)
			perSub := msgs // one publisher per subject
			if tt.mode != SubOne {
				perSub = pubs * msgs
			}
			want := subs * perSub
			if got := rec.count(evDeliver, driver.OK); got != want || rec.count(evDeliver, driver.Lost) != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0 (%v)", got, rec.count(evDeliver, driver.Lost), want, rec.msgs)
			}
			if d, o := rec.count(evDuplicate, driver.OK), rec.count(evOutOfOrder, driver.OK); d != 0 || o != 0 {
				t.Errorf("duplicates %d, out of order %d", d, o)
			}
			if got := rec.count(evConnect, driver.OK); got != subs+pubs {
				t.Errorf("connect events %d, want %d", got, subs+pubs)
			}
			tl, ok := c.Final()
			if !ok || tl.Expected != uint64(want) || tl.Received != uint64(want) || tl.Lost != 0 {
				t.Errorf("Final() = %+v, %v", tl, ok)
			}
		})
	}
}

// TestBacklogIsNotLoss holds the subscribers' reader while the publishers
// publish: the messages wait in the broker and the sockets, and the drain
// waits for them instead of counting them lost.
func TestBacklogIsNotLoss(t *testing.T) {
	b := brokers(t, target.Options{})
	for _, proto := range []string{NATS, MQTT} {
		t.Run(proto, func(t *testing.T) {
			c, acts := setup(t, "{protocol: "+proto+", subjects: 1, drain_idle: 5s}", urlFor(b, proto))
			rec := &recorder{}
			c.Observe(rec)
			ss := openAll(t, c, "subscribers", 0, 4)
			ps := openAll(t, c, "publishers", 4, 1)
			r := c.cur.Load()
			var held []*subscription
			r.mu.Lock()
			held = append(held, r.subs...)
			r.mu.Unlock()
			if len(held) != 4 {
				t.Fatalf("%d subscriptions, want 4", len(held))
			}
			for _, s := range held {
				s.mu.Lock() // the reader blocks on it
			}
			publishAll(t, ps, acts[0], 200)
			closeAll(ps)
			closeAll(ss)
			go func() {
				time.Sleep(300 * time.Millisecond)
				for _, s := range held {
					s.mu.Unlock()
				}
			}()
			took := drain(t, c, 10*time.Second)
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != 800 || lost != 0 {
				t.Errorf("delivered %d, lost %d, want 800 and 0", got, lost)
			}
			if took < 250*time.Millisecond || took > 5*time.Second {
				t.Errorf("the drain took %v; the backlog was released after 300ms", took)
			}
		})
	}
}

// TestLossCounted: every delivery a subscriber was owed is delivered,
// lost while connected, or missed while disconnected. Four subscribers, the
// fourth through a proxy; one publisher. A message the broker never
// delivers (its number counted, its bytes never written: a publisher whose
// message was suppressed) is lost while connected by all four. Then the
// proxy holds the fourth's bytes back, and cuts its connection (the
// server's doing): what was held, and what is published while the fourth
// cannot connect again, was still owed to it, and is missed while
// disconnected; once it is back it receives the rest. The truth, message
// by message: each subscriber is owed 81; the first three receive 80 and
// lose 1 while connected; the fourth receives 45, loses 1 while connected
// and misses 35 while disconnected, in the run's one outage.
func TestLossCounted(t *testing.T) {
	b := brokers(t, target.Options{})
	for _, proto := range []string{NATS, MQTT5} {
		t.Run(proto, func(t *testing.T) {
			px := newProxy(t, strings.TrimPrefix(strings.TrimPrefix(urlFor(b, proto), "nats://"), "mqtt://"))
			file := filepath.Join(t.TempDir(), "acc.csv")
			c, acts := setup(t, "{protocol: "+proto+", subjects: 1, drain_idle: 300ms, accounting_file: "+file+"}", urlFor(b, proto))
			lossy, _ := setup(t, "{protocol: "+proto+", subjects: 1}", map[string]string{NATS: "nats://", MQTT5: "mqtt://"}[proto]+px.addr())
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			ss := openAll(t, c, "subscribers", 0, 3)
			// The fourth subscriber goes through the proxy, accounted in
			// the same run.
			lossy.cur.Store(r)
			lossy.proto = c.proto
			cut, err := lossy.Open(t.Context(), driver.User{ID: 3, Group: "subscribers"})
			if err != nil {
				t.Fatal(err)
			}
			ps := openAll(t, c, "publishers", 4, 1)
			delivered := func(n uint64) { t.Helper(); waitFor(t, func() bool { return r.stats.delivered.Load() == n }) }
			publishAll(t, ps, acts[0], 30)
			delivered(4 * 30)
			r.reg.lookup(keyOf(4, 0)).sent.Add(1) // number 31: never sent
			publishAll(t, ps, acts[0], 10)
			delivered(4 * 40)
			px.pause()
			publishAll(t, ps, acts[0], 25) // never reach the fourth
			delivered(4*40 + 3*25)
			px.refuse(true)
			px.cut()
			waitFor(t, func() bool { return r.stats.disconnects.Load() == 1 })
			publishAll(t, ps, acts[0], 10) // while the fourth cannot connect
			delivered(4*40 + 3*35)
			px.refuse(false)
			waitFor(t, func() bool { return r.stats.connected.Load() == 5 })
			publishAll(t, ps, acts[0], 5) // the fourth is back
			closeAll(ps)
			closeAll(append(ss, cut))
			drain(t, c, 5*time.Second)
			const owed, connected, missed = 4 * 81, 4, 35
			if got, lost, miss := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost), rec.count(evMissed, driver.Lost); got != owed-connected-missed || lost != connected || miss != missed {
				t.Errorf("delivered %d, lost while connected %d, missed while disconnected %d; want %d, %d, %d (%v)",
					got, lost, miss, owed-connected-missed, connected, missed, rec.msgs)
			}
			if n := rec.count(evConnect, driver.IO); n != 1 {
				t.Errorf("%d connections counted lost, want 1 (%v)", n, rec.msgs)
			}
			if n := rec.count(evOutage, driver.OK); n != 1 {
				t.Errorf("%d outages recorded, want 1", n)
			}
			if tl, _ := c.Final(); tl.Expected != owed || tl.Lost != connected+missed || tl.Missed != missed {
				t.Errorf("Final() = %+v, want %d owed, %d lost of which %d missed while disconnected", tl, owed, connected+missed, missed)
			}
			if lost, missed := rec.message(evDeliver, driver.Lost), rec.message(evMissed, driver.Lost); !strings.Contains(lost, "4 of 324 owed deliveries never arrived while their subscribers were connected") ||
				!strings.Contains(missed, "35 owed deliveries were missed") || !strings.Contains(missed, "1 connections broken): 35") {
				t.Errorf("messages:\n%s\n%s", lost, missed)
			}
			csv, _ := os.ReadFile(file)
			if !strings.Contains(string(csv), "\n0,4.0,4,0,81,80,1,0,0,0,0\n") || !strings.Contains(string(csv), "\n3,4.0,4,0,81,45,36,0,0,0,35\n") ||
				strings.Count(string(csv), "\n") != 5 {
				t.Errorf("accounting file:\n%s", csv)
			}
		})
	}
}

// TestRefusals: wrong credentials are Auth, a broker past its connection
// limit gives Dial; both are counted as "connect" failures and never crash.
func TestRefusals(t *testing.T) {
	b := brokers(t, target.Options{Username: "bench", Password: "s3cret", MaxConnections: 2})
	t.Setenv("PUBSUB_TEST_PASS", "s3cret")
	t.Setenv("PUBSUB_TEST_WRONG", "nope")
	for _, proto := range []string{NATS, MQTT, MQTT5} {
		t.Run(proto, func(t *testing.T) {
			// The previous protocol's connections are gone from the limit.
			waitFor(t, func() bool { return b.NATS.Clients() == 0 && b.MQTT.Clients() == 0 })
			bad, _ := setup(t, "{protocol: "+proto+", username: bench, password: \"${PUBSUB_TEST_WRONG}\"}", urlFor(b, proto))
			rec := &recorder{}
			bad.Observe(rec)
			_, err := bad.Open(t.Context(), driver.User{ID: 0, Group: "subscribers"})
			if classOf(err) != "auth" || rec.count(evConnect, driver.Auth) != 1 {
				t.Errorf("wrong password: Open = %v (class %s), auth events %d", err, classOf(err), rec.count(evConnect, driver.Auth))
			}
			waitFor(t, func() bool { return b.NATS.Clients() == 0 && b.MQTT.Clients() == 0 })
			if strings.Contains(fmt.Sprint(err, rec.msgs), "nope") {
				t.Errorf("the password appears in %v", err)
			}
			good, _ := setup(t, "{protocol: "+proto+", username: bench, password: \"${PUBSUB_TEST_PASS}\"}", urlFor(b, proto))
			good.Observe(rec)
			t.Cleanup(func() { good.Drain(context.Background()) })
			ss := openAll(t, good, "subscribers", 0, 2)
			_, err = good.Open(t.Context(), driver.User{ID: 2, Group: "subscribers"})
			if classOf(err) != "dial" || rec.count(evConnect, driver.Dial) != 1 {
				t.Errorf("past the limit: Open = %v (class %s), dial events %d", err, classOf(err), rec.count(evConnect, driver.Dial))
			}
			closeAll(ss)
			drain(t, good, time.Second)
		})
	}
}

func TestPreflight(t *testing.T) {
	b := brokers(t, target.Options{})
	for _, proto := range []string{NATS, MQTT} {
		c, _ := setup(t, "{protocol: "+proto+"}", urlFor(b, proto))
		if err := c.Preflight(t.Context()); err != nil {
			t.Errorf("%s: Preflight = %v", proto, err)
		}
	}
	down, _ := setup(t, "{timeout: 2s}", "nats://127.0.0.1:1")
	if err := down.Preflight(t.Context()); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Preflight against nothing = %v", err)
	}
	// A server that says nothing is not a NATS server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	c, _ := setup(t, "{timeout: 300ms}", "nats://"+ln.Addr().String())
	if err := c.Preflight(ctx); classOf(err) != "timeout" {
		t.Errorf("Preflight against a silent server = %v (class %s), want a timeout", err, classOf(err))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestBrokerRestart stops the broker mid-run and starts it again on the
// same port: every connection breaks and is counted, subscribers and
// publishers reconnect with back-off, the outage window is recorded, and
// the run goes on: what is published after the restart is delivered and
// accounted.
func TestBrokerRestart(t *testing.T) {
	for _, proto := range []string{NATS, MQTT} {
		t.Run(proto, func(t *testing.T) {
			b := brokers(t, target.Options{})
			addr := b.NATS.Addr()
			if proto != NATS {
				addr = b.MQTT.Addr()
			}
			c, acts := setup(t, "{protocol: "+proto+", subjects: 2, drain_idle: 500ms}", urlFor(b, proto))
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			ss := openAll(t, c, "subscribers", 0, 10)
			ps := openAll(t, c, "publishers", 10, 2)
			publishAll(t, ps, acts[0], 50)
			waitFor(t, func() bool { return r.stats.delivered.Load() == 500 })
			restart := func() {
				var err error
				if proto == NATS {
					b.NATS.Close()
					time.Sleep(300 * time.Millisecond)
					b.NATS, err = target.StartNATS(addr, target.Options{})
				} else {
					b.MQTT.Close()
					time.Sleep(300 * time.Millisecond)
					b.MQTT, err = target.StartMQTT(addr, target.Options{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			restart()
			waitFor(t, func() bool { return r.stats.connected.Load() == 12 })
			publishAll(t, ps, acts[0], 50)
			closeAll(ps)
			closeAll(ss)
			drain(t, c, 5*time.Second)
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != 1000 || lost != 0 {
				t.Errorf("delivered %d, lost %d, want 1000 and 0 (%v)", got, lost, rec.msgs)
			}
			if broke := rec.count(evConnect, driver.IO); broke != 12 {
				t.Errorf("%d connections counted broken, want 12 (%v)", broke, rec.msgs)
			}
			if ok := rec.count(evConnect, driver.OK); ok != 24 {
				t.Errorf("%d connections set up, want 24", ok)
			}
			broken, n, length := r.outageTotals()
			if broken != 0 || n != 1 || length < 250*time.Millisecond || length > 8*time.Second {
				t.Errorf("outages: %d broken now, %d windows, %v in all; want 0, 1, about the 300ms down", broken, n, length)
			}
		})
	}
}

// TestSlowConsumer: a subscriber that stops reading is cut off by the NATS
// server; with the monitor, the break is counted as a slow consumer, its
// missing messages are lost in the break, and it reconnects.
func TestSlowConsumer(t *testing.T) {
	b := brokers(t, target.Options{MaxPending: 64 << 10, Monitor: true})
	c, acts := setup(t, "{subjects: 1, readers: 2, drain_idle: 300ms, monitor: "+b.NATS.MonitorURL()+"}", b.NATS.URL(), "{name: publish, rate: 1/s, size: 8KB}")
	rec := &recorder{}
	c.Observe(rec)
	r := c.cur.Load()
	ss := openAll(t, c, "subscribers", 0, 2)
	ps := openAll(t, c, "publishers", 2, 1)
	r.mu.Lock()
	slow := r.subs[0]
	r.mu.Unlock()
	slow.mu.Lock()                   // its loop stops reading it
	publishAll(t, ps, acts[0], 1500) // 12 MB: past the socket buffers and 64 KB pending
	waitFor(t, func() bool { return b.NATS.SlowConsumers() > 0 })
	slow.mu.Unlock()
	waitFor(t, func() bool { return r.stats.slow.Load() == 1 })
	waitFor(t, func() bool { return r.stats.connected.Load() == 3 }) // reconnected
	closeAll(ps)
	closeAll(ss)
	drain(t, c, 5*time.Second)
	tl, _ := c.Final()
	// On a loaded machine the server may cut the other subscriber off too
	// (64 KB pending is little): then every cut-off the server counted
	// must be one the driver saw, and the other's losses are outages too.
	cut := b.NATS.SlowConsumers()
	if cut != int64(r.stats.slow.Load()) {
		t.Errorf("the server cut %d slow consumers off, the driver saw %d", cut, r.stats.slow.Load())
	}
	if tl.Lost == 0 || tl.Missed != tl.Lost || (cut == 1 && rec.count(evDeliver, driver.OK) < 1500) {
		t.Errorf("Final() = %+v, delivered %d, %d cut off: the slow one lost what was in flight, the other nothing", tl, rec.count(evDeliver, driver.OK), cut)
	}
	if !strings.Contains(strings.Join(rec.msgs, "\n"), "slow consumer cut off by the server") {
		t.Errorf("messages %v", rec.msgs)
	}
}

// TestDevices: users that act can also subscribe (the "device"
// that connects, subscribes and publishes, one user): with
// subscribe: {publishers: all}, every publisher gets every publisher's
// messages, its own included, over its own connection, and the accounting
// expects exactly those.
func TestDevices(t *testing.T) {
	b := brokers(t, target.Options{})
	for _, proto := range []string{NATS, MQTT} {
		t.Run(proto, func(t *testing.T) {
			const devices, msgs = 4, 40
			c, acts := setup(t, fmt.Sprintf("{protocol: %s, subjects: %d, subscribe: {publishers: all}}", proto, devices), urlFor(b, proto))
			rec := &recorder{}
			c.Observe(rec)
			ps := openAll(t, c, "publishers", 0, devices)
			publishAll(t, ps, acts[0], msgs)
			closeAll(ps)
			drain(t, c, 10*time.Second)
			want := devices * devices * msgs
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != want || lost != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0 (%v)", got, lost, want, rec.msgs)
			}
			if tl, _ := c.Final(); tl.Expected != uint64(want) || tl.Received != uint64(want) {
				t.Errorf("Final() = %+v, want %d expected and received", tl, want)
			}
			if got := rec.count(evConnect, driver.OK); got != devices {
				t.Errorf("%d connections, want one per device (%d)", got, devices)
			}
		})
	}
}

// TestPersistentSession: an MQTT subscriber with clean_session false and
// QoS 1 loses its connection; the broker keeps its session and queues what
// is published meanwhile, and the subscriber's accounting goes on across
// the reconnection: those messages are owed and delivered, none lost.
// With a clean session the same messages are owed to it all the same (the
// broker broke the connection, the user did not leave) but never reach it:
// missed while disconnected, exactly the 30 published while away. QoS 1 is
// at least once: a message whose PUBACK the cut lost comes again
// (duplicate), and a broker may interleave what it kept with what is new
// (out of order); neither is loss.
func TestPersistentSession(t *testing.T) {
	b := brokers(t, target.Options{})
	mq := testenv.Mosquitto(t, testenv.MosquittoOptions{})
	for _, tt := range []struct {
		broker, url string
		clean       bool
	}{{"embedded", b.MQTT.URL(), false}, {"embedded", b.MQTT.URL(), true}, {"mosquitto", mq.URL, false}, {"mosquitto", mq.URL, true}} {
		clean := tt.clean
		t.Run(fmt.Sprintf("%s/clean_session=%v", tt.broker, clean), func(t *testing.T) {
			px := newProxy(t, strings.TrimPrefix(tt.url, "mqtt://"))
			block := fmt.Sprintf("{protocol: mqtt, qos: 1, clean_session: %v, subjects: 1, drain_idle: 500ms}", clean)
			c, acts := setup(t, block, tt.url)
			viaProxy, _ := setup(t, block, "mqtt://"+px.addr())
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			viaProxy.cur.Store(r)
			viaProxy.ClientID = c.ClientID
			sub, err := viaProxy.Open(t.Context(), driver.User{ID: 0, Group: "subscribers"})
			if err != nil {
				t.Fatal(err)
			}
			ps := openAll(t, c, "publishers", 1, 1)
			publishAll(t, ps, acts[0], 20)
			waitFor(t, func() bool { return r.stats.delivered.Load() == 20 })
			px.cut()
			waitFor(t, func() bool { return r.stats.disconnects.Load() == 1 })
			publishAll(t, ps, acts[0], 30) // while the subscriber is away
			waitFor(t, func() bool { return r.stats.connected.Load() == 2 })
			publishAll(t, ps, acts[0], 10)
			closeAll(ps)
			closeAll([]driver.Session{sub})
			drain(t, c, 5*time.Second)
			tl, _ := c.Final()
			var missed uint64
			if clean {
				missed = 30 // not subscribed while away, but owed
			}
			if tl.Expected != 60 || tl.Received != 60-missed || tl.Lost != missed || tl.Missed != missed {
				t.Errorf("Final() = %+v, want 60 owed, %d received, %d missed while disconnected (%v)", tl, 60-missed, missed, rec.msgs)
			}
		})
	}
}

// TestSizeDistribution: a publish action with a size distribution sends
// messages of many sizes within its bounds, each accounted like any other.
func TestSizeDistribution(t *testing.T) {
	b := brokers(t, target.Options{})
	for _, proto := range []string{NATS, MQTT} {
		t.Run(proto, func(t *testing.T) {
			c, acts := setup(t, "{protocol: "+proto+", subjects: 1}", urlFor(b, proto),
				"{name: publish, rate: 1/s, distribution: uniform, min: 100B, max: 1000B}")
			rec := &recorder{}
			c.Observe(rec)
			ss := openAll(t, c, "subscribers", 0, 2)
			ps := openAll(t, c, "publishers", 2, 1)
			const msgs = 400
			sizes := map[int64]int{}
			var sum int64
			for range msgs {
				out, err := ps[0].Do(t.Context(), acts[0])
				if err != nil {
					t.Fatal(err)
				}
				sizes[out.BytesOut]++
				sum += out.BytesOut
			}
			closeAll(ps)
			closeAll(ss)
			drain(t, c, 5*time.Second)
			lo, hi := int64(1<<62), int64(0)
			for n := range sizes {
				lo, hi = min(lo, n), max(hi, n)
			}
			// Frames: the payload and a header of 10 to 30 bytes.
			if len(sizes) < 20 || lo < 100 || lo > 150 || hi < 960 || hi > 1040 {
				t.Errorf("%d distinct frame sizes from %d to %d B, want about %d from ~100 to ~1000 B", len(sizes), lo, hi, SizeLevels)
			}
			if mean := sum / msgs; mean < 480 || mean > 640 {
				t.Errorf("mean frame %d B, want about 570", mean)
			}
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != 2*msgs || lost != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0", got, lost, 2*msgs)
			}
		})
	}
}
