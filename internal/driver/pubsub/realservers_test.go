package pubsub

import (
	"context"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// TestRefusalsRealServers: the real brokers past their connection limit
// (mosquitto's max_connections, nats-server's max_connections) refuse the
// next subscriber; the refusal is counted as a "connect" failure of a class
// (never a crash, never a delivery), and the connected subscribers go on.
func TestRefusalsRealServers(t *testing.T) {
	const limit = 3
	servers := []struct {
		name, proto string
		start       func(t *testing.T) *testenv.Broker
	}{
		{"mosquitto", MQTT, func(t *testing.T) *testenv.Broker {
			return testenv.Mosquitto(t, testenv.MosquittoOptions{MaxConnections: limit})
		}},
		{"mosquitto-v5", MQTT5, func(t *testing.T) *testenv.Broker {
			return testenv.Mosquitto(t, testenv.MosquittoOptions{MaxConnections: limit})
		}},
		{"nats-server", NATS, func(t *testing.T) *testenv.Broker {
			return testenv.NATSServer(t, testenv.NATSServerOptions{MaxConnections: limit})
		}},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			c, acts := setup(t, "{protocol: "+srv.proto+", subjects: 1, timeout: 3s, drain_idle: 300ms}", b.URL)
			rec := &recorder{}
			c.Observe(rec)
			// mosquitto lets max_connections+1 clients in, nats-server
			// max_connections: subscribe one by one until one is refused.
			ps := openAll(t, c, "publishers", 0, 1)
			var ss []driver.Session
			var err error
			for i := 1; i <= limit+2 && err == nil; i++ {
				var s driver.Session
				if s, err = c.Open(t.Context(), driver.User{ID: i, Group: "subscribers"}); err == nil {
					ss = append(ss, s)
				}
			}
			class := classOf(err)
			if err == nil || class != "dial" || len(ss) < limit-1 {
				t.Fatalf("past the limit (%d subscribers in): Open = %v (class %s), want a dial failure", len(ss), err, class)
			}
			if n := rec.count(evConnect, driver.Dial); n != 1 || rec.count(evConnect, driver.OK) != len(ss)+1 {
				t.Errorf("%d refusals counted, want 1; %d connections, want %d (%v)", n, rec.count(evConnect, driver.OK), len(ss)+1, rec.msgs)
			}
			publishAll(t, ps, acts[0], 20)
			closeAll(ps)
			closeAll(ss)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != len(ss)*20 || lost != 0 {
				t.Errorf("delivered %d, lost %d, want %d and 0: the refused one is expected nothing", got, lost, len(ss)*20)
			}
			t.Logf("%s refused subscriber %d: %v", srv.name, len(ss)+1, err)
		})
	}
}
