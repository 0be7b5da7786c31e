package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
)

// mailResult is a mail run whose messages owed 28 deliveries: 20 seen (12
// of them timed), 8 lost; 2 copies misdelivered, 4 duplicated, over a
// steady phase and the drain.
func mailResult(settings map[string]string, users int) *result.Run {
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{
		Scenario: "mail", Driver: "mail", Target: "imap://127.0.0.1:1", Model: "open", Users: users, Segment: "1/1", Seed: 1, Speedup: 1,
		Actions: []string{"send", "deliver", "misdeliver", "duplicate"}, Events: []string{"deliver", "misdeliver", "duplicate"}, Runs: 1,
		Settings: settings, Host: result.Host{Hostname: "box", Cores: 2}, StartedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}}
	rep := result.Repetition{ElapsedS: 2}
	for i, ph := range []string{"steady", "drain"} {
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: ph, UsersMean: 6, UsersMax: 6}
		var send, deliver, mis, dup metrics.ActionSnapshot
		if ph == "steady" {
			send.Count = 12
			for range 12 {
				send.Latency.Record(3000)
				send.Service.Record(3000)
				deliver.Latency.Record(20_000)
			}
			deliver.Count = 12
		} else {
			deliver.Count, deliver.Errors[driver.Lost] = 16, 8 // 8 found, 8 lost
			deliver.Messages[driver.Lost] = "message ab.2 (to user0003, user0005, user0006 through list001@example.test) was accepted by the SMTP server and never reached user0003's INBOX"
			mis.Count, mis.Errors[driver.Misdelivered] = 2, 2
			mis.Messages[driver.Misdelivered] = "message ab.5 (to user0003, user0005, user0006 through list001@example.test) was found in user0002's INBOX, and user0002 is none of its recipients"
			dup.Count, dup.Errors[driver.Duplicate] = 4, 4
			dup.Messages[driver.Duplicate] = "message ab.7 (to user0002, user0003, user0004) reached user0002's INBOX more than once"
		}
		for _, s := range []*metrics.ActionSnapshot{&send, &deliver, &mis, &dup} {
			iv.Actions = append(iv.Actions, result.FromSnapshot(s))
		}
		rep.Intervals = append(rep.Intervals, iv)
	}
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	run.Repetitions = []result.Repetition{rep}
	return run
}

func mailText(t *testing.T, run *result.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Text(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "\nMail delivery")
	if i < 0 {
		t.Fatalf("no mail section in:\n%s", out)
	}
	return out[i+1:]
}

// The summary's mail section gives the accounting per recipient, a sample
// of each class, and in words what the run could not account for: lists
// that may differ from the server's, list members outside the run.
func TestTextMailDelivery(t *testing.T) {
	out := mailText(t, mailResult(map[string]string{"lists": "3 lists generated from the number of users, members min 2 / avg 3 / max 4"}, 6))
	for _, want := range []string{
		"Mail delivery (one per recipient, lists expanded; whole run):\n" +
			"  owed 28: delivered 20 (12 timed, 8 found at a log-on or after the load), lost 8; misdelivered 2, duplicated 4\n",
		"  lost: message ab.2 (to user0003, user0005, user0006 through list001@example.test) was accepted by the SMTP server and never reached user0003's INBOX\n",
		"  misdelivered: message ab.5",
		"  duplicate: message ab.7 (to user0002, user0003, user0004) reached user0002's INBOX more than once\n",
		"  Note: if the server's lists differ from the run's (3 lists generated from the number of users, members min 2 / avg 3 / max 4), each difference counts once lost, and once misdelivered when it lands in a user of the run: describe the server's lists in mail.lists (file or members).\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the mail section lacks %q:\n%s", want, out)
		}
	}
	out = mailText(t, mailResult(map[string]string{"lists": "2 lists from lists.csv, 9 members (nested lists expanded)",
		"lists_foreign_members": "2 (bob@partner.test, eve@partner.test)", "lists_users_named": "150"}, 100))
	for _, want := range []string{
		"Note: the lists name 2 (bob@partner.test, eve@partner.test) members that are not this run's users (another domain or name): their mail is not tracked",
		"Note: the lists name users up to the 150th, and this run has 100: mail to the others is not tracked.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the mail section lacks %q:\n%s", want, out)
		}
	}
	// A run whose lists name no more users than it has says nothing of them.
	if out := mailText(t, mailResult(map[string]string{"lists": "none", "lists_users_named": "6"}, 6)); strings.Contains(out, "Note:") {
		t.Errorf("notes without cause:\n%s", out)
	}
}

// Another family's run has no mail section.
func TestTextNoMailSection(t *testing.T) {
	run := mailResult(nil, 6)
	run.Meta.Driver = "pubsub"
	var b bytes.Buffer
	Text(&b, run)
	if strings.Contains(b.String(), "Mail delivery") {
		t.Error(b.String())
	}
}
