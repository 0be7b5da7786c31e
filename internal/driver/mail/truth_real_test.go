package mail

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// Ground truth through Postfix and Dovecot: Postfix misroutes every
// message for user0004 to user0006 (a virtual alias configured here) and
// discards messages 2 and 6 (header_checks DISCARD on their marks); the
// list is the server's, described to throng inline. Per message (three,
// list, one, three, list, one): "three" owes user0002-4 and reaches
// user0002, user0003 and, misrouted, user0006: 2 delivered, 1 lost, 1
// misdelivered; message 2 (the list, 3 members) and 6 (one recipient) are
// discarded: 4 lost. 14 owed: 8 delivered, 6 lost, 2 misdelivered; Dovecot
// saves 10 messages.
func TestDeliveryTruthPostfixDovecot(t *testing.T) {
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 6, Password: realPassword})
	p := testenv.Postfix(t, testenv.PostfixOptions{Dovecot: d,
		Aliases: map[string][]string{
			"list001@example.test":  {"user0003@example.test", "user0005@example.test", "user0006@example.test"},
			"user0004@example.test": {"user0006@example.test"},
		},
		HeaderChecks: []string{`/^X-Throng-Mark: [0-9a-f]+\.(2|6)$/ DISCARD a fault of the test`},
	})
	t.Setenv(PasswordEnv, realPassword)
	c, acts := load(t, fmt.Sprintf(truthScenario, Online), "imap://"+d.Addr+"?smtp="+p.Addr)
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, 6, 3)
	saved := func() int {
		b, _ := os.ReadFile(d.ErrorLog)
		return strings.Count(string(b), "saved mail to INBOX")
	}
	before := saved()
	sender := open(t, c, 1)[0]
	for i := range 6 {
		if _, err := sender.Do(context.Background(), acts[[]string{"three", "list", "one"}[i%3]]); err != nil {
			t.Fatal(err)
		}
	}
	sender.Close()
	// Postfix's queue empties: every delivery is made (or discarded).
	deadline := time.Now().Add(20 * time.Second)
	for !p.QueueEmpty() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := saved() - before; got != 10 {
		t.Fatalf("Dovecot saved %d messages, want 10 (the test's truth is wrong, or Postfix did not apply its faults)", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Drain(ctx)
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if got := ev.byEvent; got != [3]int{14, 2, 0} || ev.byClass[driver.OK] != 8 || ev.byClass[driver.Lost] != 6 || ev.byClass[driver.Misdelivered] != 2 {
		t.Errorf("deliver/misdeliver/duplicate events %v, want [14 2 0]; by class %v, want 8 ok, 6 lost, 2 misdelivered\n%s",
			got, ev.byClass, strings.Join(ev.msgs, "\n"))
	}
	if msgs := strings.Join(ev.msgs, "\n"); !strings.Contains(msgs, "never reached user0004's INBOX") ||
		!strings.Contains(msgs, "was found in user0006's INBOX, and user0006 is none of its recipients") {
		t.Errorf("sample messages:\n%s", msgs)
	}
}
