package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// The values of mail.smtp_tls.
const (
	smtpNoTLS       = "none"
	smtpStartTLS    = "starttls"
	smtpImplicitTLS = "tls"
)

// The values of mail.smtp_engine.
const (
	smtpEngineEpoll      = "epoll"
	smtpEngineGoroutines = "goroutines"
)

// dialSMTP connects to the SMTP server, in TLS from the first byte when
// smtp_tls is tls, reads the greeting and says EHLO; with starttls it then
// upgrades the connection (the server must offer STARTTLS) and says EHLO
// again, as RFC 3207 wants. The client is ready for AUTH or MAIL. The
// returned countConn (the TCP connection, counting the bytes on the wire)
// is non-nil whenever a connection was made, even with an error: the
// caller closes it. Errors are classed: dial, tls, or as smtpErr says.
func (c *Config) dialSMTP(ctx context.Context, ehlo string) (*smtpClient, *countConn, error) {
	// One message per connection: no TCP keep-alive to set up (3 system
	// calls per message saved).
	d := net.Dialer{KeepAlive: -1}
	nc, err := d.DialContext(ctx, "tcp", c.smtpAddr)
	if err != nil {
		return nil, nil, driver.Errorf(driver.Dial, fmt.Errorf("SMTP: %w", err))
	}
	cc := &countConn{Conn: quiet(nc)}
	var conn net.Conn = cc
	if c.SMTPTLS == smtpImplicitTLS {
		tc := tls.Client(cc, c.smtpTLSCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, cc, driver.Errorf(driver.TLS, fmt.Errorf("SMTP TLS: %w", err))
		}
		conn = tc
	}
	deadline, ok := ctx.Deadline()
	if d := time.Now().Add(c.Timeout.D()); !ok || d.Before(deadline) {
		deadline = d
	}
	cl := newSMTPClient(conn, deadline)
	if err := cl.greet(ehlo); err != nil {
		return nil, cc, smtpErr("EHLO", err)
	}
	if c.SMTPTLS == smtpStartTLS {
		if err := cl.startTLS(ctx, c.smtpTLSCfg, ehlo); err != nil {
			return nil, cc, err
		}
	}
	return cl, cc, nil
}

// errNoStartTLS: smtp_tls is starttls and the server does not offer it.
var errNoStartTLS = errors.New("the server does not offer STARTTLS (smtp_tls: starttls); set smtp_tls: none, or tls for a port that speaks TLS at once")

// startTLS says STARTTLS, wraps the connection in TLS, and says EHLO again
// (the capabilities before TLS are forgotten, RFC 3207 4.2). Whatever the
// server sent after its 220 is discarded (a STARTTLS injection would
// otherwise be read as the answer to a command sent over TLS).
func (c *smtpClient) startTLS(ctx context.Context, cfg *tls.Config, ehlo string) error {
	if !c.startTLSOffered {
		return driver.Errorf(driver.Protocol, fmt.Errorf("SMTP STARTTLS: %w", errNoStartTLS))
	}
	if _, err := c.cmd(220, "STARTTLS"); err != nil {
		return smtpErr("STARTTLS", err)
	}
	tc := tls.Client(c.nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return driver.Errorf(driver.TLS, fmt.Errorf("SMTP STARTTLS: %w", err))
	}
	c.nc = tc
	c.r.Reset(tc)
	c.pipelining, c.startTLSOffered = false, false
	text, err := c.cmd(2, "EHLO ", ehlo)
	if err != nil {
		return smtpErr("EHLO", err)
	}
	c.capabilities(text)
	return nil
}

// capabilities notes what an EHLO reply offers.
func (c *smtpClient) capabilities(text string) {
	p, st := offers(text)
	c.pipelining = c.pipelining || p
	c.startTLSOffered = c.startTLSOffered || st
}

// offers reads an EHLO reply's text: does the server offer PIPELINING
// (RFC 2920), STARTTLS (RFC 3207)?
func offers(text string) (pipelining, startTLS bool) {
	for _, l := range strings.Split(text, "\n") {
		switch strings.ToUpper(strings.TrimSpace(l)) {
		case "PIPELINING":
			pipelining = true
		case "STARTTLS":
			startTLS = true
		}
	}
	return pipelining, startTLS
}
