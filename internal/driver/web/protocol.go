package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// h2Preface is what a client of HTTP/2 with prior knowledge sends first:
// the connection preface and an empty SETTINGS frame (RFC 9113 §3.4).
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// preflightProtocol connects once and finds out what the dynamic users
// will speak: over TLS, the protocol negotiated by ALPN (h2 must be
// offered by the server when protocol is h2); without TLS and protocol
// h2c, that the server answers the HTTP/2 preface with its SETTINGS. What
// it found is recorded (Describe: "protocol"), never a request sent.
func (c *Config) preflightProtocol(ctx context.Context) error {
	where := "target " + c.target.Redacted()
	d := net.Dialer{Timeout: c.Timeout.D()}
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("%s: %w", where, driver.Errorf(driver.Dial, err))
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	switch {
	case c.tls:
		cfg := c.tlsCfg.Clone()
		// Offer both, so a server without HTTP/2 says what it speaks.
		cfg.NextProtos = []string{"h2", "http/1.1"}
		if c.Protocol != H2 {
			cfg.NextProtos = []string{"http/1.1"}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("%s: TLS handshake: %w", where, err)
		}
		got := tc.ConnectionState().NegotiatedProtocol
		if c.Protocol == H2 && got != "h2" {
			return fmt.Errorf("%s does not offer HTTP/2 (ALPN chose %q): use protocol http1, or enable HTTP/2 on the server", where, got)
		}
		if got == "" {
			got = "http/1.1"
		}
		c.dyn.negotiated = got + " (TLS, ALPN)"
	case c.Protocol == H2C:
		if _, err := conn.Write(h2Preface); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		var head [9]byte
		_, err := io.ReadFull(conn, head[:])
		if err != nil || head[3] != 0x4 {
			if bytes.HasPrefix(head[:], []byte("HTTP/1.")) {
				err = fmt.Errorf("it answered in HTTP/1")
			} else if err == nil {
				err = fmt.Errorf("its first frame is of type %d, not SETTINGS", head[3])
			}
			return fmt.Errorf("%s does not speak HTTP/2 without TLS (h2c, prior knowledge): %v; use protocol http1", where, err)
		}
		c.dyn.negotiated = "h2c (prior knowledge)"
	default:
		c.dyn.negotiated = "http/1.1"
	}
	conn.SetDeadline(time.Time{})
	return nil
}
