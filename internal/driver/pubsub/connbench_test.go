package pubsub

import (
	"testing"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
)

func BenchmarkConnectSubscribe(b *testing.B) {
	for _, proto := range []string{NATS, MQTT} {
		b.Run(proto, func(b *testing.B) {
			br, err := target.StartBoth("127.0.0.1:0", target.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			url := br.NATS.URL()
			if proto == MQTT {
				url = br.MQTT.URL()
			}
			c, _ := setup(&testing.T{}, "{subjects: 5}", url)
			c.Observe(&recorder{})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.Open(b.Context(), driver.User{ID: i, Group: "subscribers"}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.cur.Load().close()
		})
	}
}
