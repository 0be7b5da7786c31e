package pubsub

import (
	"fmt"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
	"github.com/throng-io/throng/internal/testenv"
)

// TestDeviceDisconnect: devices (users that subscribe to every subject and
// publish) connect, publish, disconnect and connect again with the actions
// op: connect and op: disconnect. What is published while a device is away
// is not expected of it, so no loss is counted, and it is not delivered to
// it: the deliveries are exactly those made while connected, fewer than if
// it had stayed. connect is a no-op for a connected user, a publish while
// away fails (class dial), and disconnect leaves cleanly (no break counted).
// Against the embedded brokers, nats-server and mosquitto.
func TestDeviceDisconnect(t *testing.T) {
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
			c, acts := setup(t, fmt.Sprintf("{protocol: %s, subjects: 1, timeout: 3s, subscribe: {publishers: all}}", proto), srv.url(t),
				"{name: publish, rate: 1/s}", "{name: back, rate: 1/s, op: connect}", "{name: leave, rate: 1/s, op: disconnect}")
			pub, conn, disc := acts[0], acts[1], acts[2]
			rec := &recorder{}
			c.Observe(rec)
			r := c.cur.Load()
			ds := openAll(t, c, "publishers", 0, 3)
			d0, d1, d2 := ds[0], ds[1], ds[2]
			do := func(s driver.Session, a driver.Action) {
				t.Helper()
				if _, err := s.Do(t.Context(), a); err != nil {
					t.Fatalf("%s: %v", a.(*action).op, err)
				}
			}
			publishAll(t, ds[:2], pub, 10) // each device gets 20
			waitFor(t, func() bool { return r.stats.delivered.Load() == 60 })

			t0 := time.Now()
			do(d1, disc)
			if took := time.Since(t0); took > 2*time.Second {
				t.Errorf("disconnect took %s: the broker did not close the connection after the clean disconnect", took)
			}
			do(d1, disc) // already away: a no-op
			if got := r.stats.connected.Load(); got != 2 {
				t.Errorf("%d connected after the disconnect, want 2", got)
			}
			_, err := d1.Do(t.Context(), pub)
			if err == nil || driver.Classify(err) != driver.Dial {
				t.Errorf("a publish while away: %v, want a dial error", err)
			}
			// Devices 0 and 2 get 15 + 5 each, device 1 none, including
			// from device 2's stream, which begins while it is away.
			publishAll(t, []driver.Session{d0}, pub, 15)
			publishAll(t, []driver.Session{d2}, pub, 5)
			waitFor(t, func() bool { return r.stats.delivered.Load() == 100 })
			do(d0, conn) // already connected: a no-op
			do(d1, conn)
			if got := r.stats.connected.Load(); got != 3 {
				t.Errorf("%d connected after the connect, want 3", got)
			}
			publishAll(t, ds, pub, 5) // each device gets 15
			closeAll(ds)
			drain(t, c, 10*time.Second)

			const want = 60 + 40 + 45
			const always = 3 * (30 + 15 + 10) // had device 1 stayed connected
			tl, _ := c.Final()
			if tl.Expected != want || tl.Received != want || tl.Lost != 0 || tl.Early != 0 || tl.Duplicate != 0 {
				t.Errorf("Final() = %+v, want %d expected and received (not %d), none lost, early or duplicated (%v)", tl, want, always, rec.msgs)
			}
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != want || lost != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0 (%v)", got, lost, want, rec.msgs)
			}
			if got := rec.count(evConnect, driver.OK); got != 4 {
				t.Errorf("%d connections, want 4 (three devices, one reconnection)", got)
			}
			if got := r.stats.disconnects.Load(); got != 0 {
				t.Errorf("%d broken connections counted, want 0: disconnect is clean", got)
			}
		})
	}
}
