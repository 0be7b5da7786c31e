package mail

import (
	"context"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/driver/mail/smtpclient"
)

// A server that stops answering mid-transaction ends the send at the
// action's timeout, class timeout: one deadline bounds the whole
// transaction, whichever exchange stalls; with either engine.
func TestSMTPStallEndsAtTheTimeout(t *testing.T) {
	engines := []string{smtpEngineGoroutines}
	if smtpclient.LoopSupported {
		engines = append(engines, smtpEngineEpoll)
	}
	for _, engine := range engines {
		for _, stallAfter := range []string{"EHLO", "DATA", "."} {
			stallEndsAtTheTimeout(t, engine, stallAfter)
		}
	}
}

func stallEndsAtTheTimeout(t *testing.T, engine, stallAfter string) {
	addr := mailtest.FakeSMTP(t, true, stallAfter)
	c, acts := load(t, "users: 1\nclosed: {total: 1}\nmail: {password: pw, timeout: 300ms, smtp_engine: "+engine+"}\nactions: [{name: send, to: [user0002@example.test], size: 3000B, sizes: fixed}]\n", "smtp://"+addr)
	ss := open(t, c, 1)
	t0 := time.Now()
	_, err := ss[0].Do(context.Background(), acts["send"])
	el := time.Since(t0)
	if driver.Classify(err) != driver.Timeout || el < 250*time.Millisecond || el > 2*time.Second {
		t.Errorf("%s, stalled after %s: %v (class %v) after %v; want a timeout after 300ms", engine, stallAfter, err, driver.Classify(err), el)
	}
}
