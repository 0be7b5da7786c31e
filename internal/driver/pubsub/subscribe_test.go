package pubsub

import (
	"fmt"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
	"github.com/throng-io/throng/internal/testenv"
)

// TestDeviceSubscribe: users without a group subscription subscribe mid-run
// with op subscribe, to one subject and then to every subject (wildcard),
// and receive exactly the messages published after each subscription was
// confirmed: none of those before, none on subjects they do not have, and
// none lost. Subscribing again is a no-op; a subscribe while away fails
// (class dial); op connect restores the group's subscription only (none
// here), so the extra subscriptions are gone until subscribed again.
// Against the embedded brokers, nats-server and mosquitto.
func TestDeviceSubscribe(t *testing.T) {
	b := brokers(t, target.Options{})
	servers := []struct {
		name, proto string
		url         func(t *testing.T) string
	}{
		{"embedded/nats", NATS, func(*testing.T) string { return urlFor(b, NATS) }},
		{"embedded/mqtt", MQTT, func(*testing.T) string { return urlFor(b, MQTT) }},
		{"embedded/mqtt5", MQTT5, func(*testing.T) string { return urlFor(b, MQTT5) }},
		{"nats-server", NATS, func(t *testing.T) string { return testenv.NATSServer(t, testenv.NATSServerOptions{}).URL }},
		{"mosquitto", MQTT, func(t *testing.T) string { return testenv.Mosquitto(t, testenv.MosquittoOptions{}).URL }},
		{"mosquitto-v5", MQTT5, func(t *testing.T) string { return testenv.Mosquitto(t, testenv.MosquittoOptions{}).URL }},
	}
	for _, srv := range servers {
		proto := srv.proto
		t.Run(srv.name, func(t *testing.T) {
			c, acts := setup(t, fmt.Sprintf("{protocol: %s, subjects: 2, timeout: 3s, subscribe: {subscribers: all}}", proto), srv.url(t),
				"{name: pub0, rate: 1/s, subject: 0}", "{name: pub1, rate: 1/s, subject: 1}",
				"{name: sub0, rate: 1/s, op: subscribe, subject: 0}", "{name: sub1, rate: 1/s, op: subscribe, subject: 1}",
				"{name: suball, rate: 1/s, op: subscribe, subject: wildcard}",
				"{name: back, rate: 1/s, op: connect}", "{name: leave, rate: 1/s, op: disconnect}")
			pub0, pub1, sub0, sub1, suball, conn, disc := acts[0], acts[1], acts[2], acts[3], acts[4], acts[5], acts[6]
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			// The witness gets everything: once it has, the broker has routed
			// it, and a subscription made then cannot get it any more.
			openAll(t, c, "subscribers", 100, 1)
			ds := openAll(t, c, "publishers", 0, 3)
			pub, d1, d2 := ds[0], ds[1], ds[2] // d1, d2 subscribe; pub publishes
			do := func(s driver.Session, a driver.Action) {
				t.Helper()
				if _, err := s.Do(t.Context(), a); err != nil {
					t.Fatalf("%s: %v", a.(*action).name, err)
				}
			}
			both := func(n int) {
				t.Helper()
				publishAll(t, []driver.Session{pub}, pub0, n)
				publishAll(t, []driver.Session{pub}, pub1, n)
			}

			both(10) // before any subscription: only the witness gets them
			waitFor(t, func() bool { return r.stats.delivered.Load() == 20 })
			do(d1, sub0)
			// What was published before the subscription never arrives.
			time.Sleep(100 * time.Millisecond)
			if got, early := r.stats.delivered.Load(), r.stats.early.Load(); got != 20 || early != 0 {
				t.Fatalf("%d delivered, %d early before anything was published after a subscription", got, early)
			}
			do(d1, sub0) // already subscribed: a no-op
			both(10)     // the witness 20, d1 the 10 on subject 0
			waitFor(t, func() bool { return r.stats.delivered.Load() == 50 })

			do(d1, suball) // only subject 1 is new to d1
			do(d2, suball) // everything, with one wildcard
			do(d2, sub1)   // already covered: a no-op
			both(5)        // the witness, d1 and d2 get 10 each
			waitFor(t, func() bool { return r.stats.delivered.Load() == 80 })

			// d1 comes back at once with the same client ID: the old
			// session's clean-up must not take the new one's subscription.
			do(d1, disc)
			if _, err := d1.Do(t.Context(), sub0); err == nil || driver.Classify(err) != driver.Dial {
				t.Errorf("a subscribe while away: %v, want a dial error", err)
			}
			do(d1, conn) // the group's subscription only: none
			both(5)      // the witness and d2 get 10, d1 none
			waitFor(t, func() bool { return r.stats.delivered.Load() == 100 })
			do(d1, sub1)
			both(3) // the witness and d2 get 6, d1 3
			closeAll(ds)
			drain(t, c, 10*time.Second)

			const want = 2*(10+10+5+5+3) + (10 + 10 + 3) + (10 + 10 + 6)
			tl, _ := c.Final()
			if tl.Expected != want || tl.Received != want || tl.Lost != 0 || tl.Early != 0 || tl.Duplicate != 0 || tl.OutOfOrder != 0 {
				t.Errorf("Final() = %+v, want %d expected and received, none lost, early, duplicated or out of order (%v)", tl, want, rec.msgs)
			}
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != want || lost != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0 (%v)", got, lost, want, rec.msgs)
			}
		})
	}
}
