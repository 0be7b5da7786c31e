package pubsub

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	target "github.com/throng-io/throng/internal/targets/pubsub"
	"github.com/throng-io/throng/internal/testenv"
)

// selfSigned returns a server certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	cert, certPEM, _, err := testenv.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}

// TestTLS: mqtts:// and tls:// (NATS) with the broker's certificate trusted
// through ca_file deliver exactly; an untrusted certificate is class TLS.
func TestTLS(t *testing.T) {
	cert, pemBytes := selfSigned(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pemBytes, 0o644)
	b := brokers(t, target.Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	for _, proto := range []string{NATS, MQTT5} {
		t.Run(proto, func(t *testing.T) {
			url := urlFor(b, proto)
			c, acts := setup(t, "{subjects: 1, tls: {ca_file: "+ca+"}}", url)
			if !c.tls {
				t.Fatalf("%s is not TLS", url)
			}
			rec := &recorder{}
			c.Observe(rec)
			ss := openAll(t, c, "subscribers", 0, 3)
			ps := openAll(t, c, "publishers", 3, 1)
			publishAll(t, ps, acts[0], 40)
			closeAll(ps)
			closeAll(ss)
			drain(t, c, 5*time.Second)
			if got, lost := rec.count(evDeliver, driver.OK), rec.count(evDeliver, driver.Lost); got != 120 || lost != 0 {
				t.Errorf("delivered %d, lost %d, want 120 and 0 (%v)", got, lost, rec.msgs)
			}
			untrusted, _ := setup(t, "{subjects: 1}", url)
			untrusted.Observe(rec)
			if _, err := untrusted.Open(t.Context(), driver.User{ID: 9, Group: "subscribers"}); classOf(err) != "tls" {
				t.Errorf("untrusted certificate: Open = %v (class %s), want tls", err, classOf(err))
			}
		})
	}
	// A NATS server that requires TLS, asked in plain text: a clear error.
	c, _ := setup(t, "{}", "nats://"+b.NATS.Addr())
	if err := c.Preflight(t.Context()); classOf(err) != "tls" {
		t.Errorf("plain nats:// to a TLS server: %v (class %s)", err, classOf(err))
	}
}
