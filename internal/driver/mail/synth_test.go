package mail

import (
	"fmt"
	"net/smtp"
	"regexp"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// provisionOnly hides the embedded server's Synthesize: Prepare then
// APPENDs the population as it does to a real server.
type provisionOnly struct{ p Provisioner }

func (p provisionOnly) Provision(users []string, password string, lists map[string][]string) error {
	return p.p.Provision(users, password, lists)
}

const synthScenario = `
users: 2
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 30, deleted: 1, folders: 2, folder_messages: 4, size: 20KB}
actions: [{name: check, rate: 1/s}]
`

// volatile masks what two servers may rightly answer differently: their
// UIDVALIDITY, and the time a message was delivered (Received header,
// INTERNALDATE of a delivery or an APPEND without a date).
var volatile = regexp.MustCompile(`UIDVALIDITY \d+|APPENDUID \d+|Received: by throng-embedded with ESMTP; [^\r\n]+|INTERNALDATE "[^"]+"`)

// The embedded server's synthesised population is the population a real
// server would hold: the same bytes as the messages Prepare APPENDs, the
// same every time they are read, and every IMAP operation the driver uses
// (FETCH, SEARCH, STORE, COPY, MOVE, EXPUNGE, APPEND, SMTP delivery,
// DELETE) answers exactly as on a server that stores them. Two servers,
// one synthesising and one populated by APPEND, are given the same
// conversation; their transcripts must match.
func TestSynthesisedPopulationIsTheAppendedOne(t *testing.T) {
	synth, stored := mailtest.Embedded(t), mailtest.Embedded(t)
	cs, _ := load(t, synthScenario, synth.URL())
	cs.Provisioner = synth
	ca, _ := load(t, synthScenario, stored.URL())
	ca.Provisioner = provisionOnly{stored}
	prepare(t, cs, 2, 7)
	prepare(t, ca, 2, 7)
	if st := cs.Stats(); !st.Synthetic || st.Messages != 2*(30+1+8) {
		t.Fatalf("synthesised population %+v", st)
	}
	if st := ca.Stats(); st.Synthetic || !strings.Contains(st.Method, "APPEND") {
		t.Fatalf("appended population %+v", st)
	}
	// The bytes Prepare reports are those the server serves.
	if s, a := cs.Stats().Bytes, ca.Stats().Bytes; s != a {
		t.Errorf("synthesised population holds %d bytes, appended %d", s, a)
	}
	if _, n := stored.Store().Counts(); n != 2*(30+1+8) {
		t.Fatalf("%d messages appended", n)
	}
	if _, n := synth.Store().Counts(); n != 2*(30+1+8) {
		t.Fatalf("%d messages synthesised", n)
	}
	tag := msggen.Codenames[msggen.NewRNG(msgSeed(7, 0, 0, 0)).Intn(len(msggen.Codenames))]
	all := "(UID FLAGS INTERNALDATE RFC822.SIZE BODY.PEEK[])"
	// Each step on its own connection, so that an earlier one cannot hide
	// a difference; "SMTP" delivers a message to user0001 instead.
	script := [][]string{
		{"SELECT INBOX", "FETCH 1:* " + all, "FETCH 1:* " + all}, // the same bytes twice
		{"SELECT INBOX", "UID FETCH 3 (BODY[HEADER] BODY[TEXT]<100.200> FLAGS)", "FETCH 4 BODY[]", "FETCH 4 FLAGS"},
		{"SELECT INBOX", `UID STORE 5:9 -FLAGS (\Seen)`, `UID STORE 6:7 +FLAGS (\Flagged \Deleted)`},
		{"EXAMINE INBOX", "UID SEARCH TEXT " + tag, "UID SEARCH BODY " + tag + " NOT FLAGGED",
			"UID SEARCH HEADER X-Throng-Tag " + tag, "SEARCH LARGER 20000", "SEARCH SMALLER 5000 UNSEEN",
			"UID SEARCH DELETED", "SEARCH OR FLAGGED 1:3"},
		{"SELECT INBOX", "UID MOVE 2 Folder01", `UID COPY 10:12 "Deleted Items"`, "EXPUNGE"},
		{"STATUS INBOX (MESSAGES UIDNEXT UNSEEN)", "STATUS Folder01 (MESSAGES UIDNEXT UNSEEN)"},
		{"APPEND INBOX {9+}\r\nX: y\r\n\r\nz"},
		{"SMTP"},
		{"SELECT INBOX", "FETCH 1:* " + all, "UID SEARCH TEXT " + tag, `UID STORE 1 +FLAGS.SILENT (\Deleted)`,
			"UID EXPUNGE 1:3", "UID FETCH 1:* (UID FLAGS)"},
		{"SELECT Folder01", "FETCH 1:* " + all},
		{`SELECT "Deleted Items"`, "FETCH 1:* " + all, "UID MOVE 1:* INBOX"},
		{"EXAMINE INBOX", "FETCH 1:* " + all},
		{"DELETE Folder02", `LIST "" *`},
	}
	run := func(imapAddr, smtpAddr string) []string {
		var out []string
		for _, step := range script {
			if step[0] == "SMTP" {
				if err := smtp.SendMail(smtpAddr, nil, "a@example.test", []string{"user0001@example.test"},
					[]byte("Subject: delivered\r\n\r\n"+tag+"\r\n")); err != nil {
					t.Fatal(err)
				}
				continue
			}
			out = append(out, mailtest.RawIMAP(t, imapAddr, "user0001", cs.password, step...)...)
		}
		return out
	}
	got, want := run(synth.IMAPAddr(), synth.SMTPAddr()), run(stored.IMAPAddr(), stored.SMTPAddr())
	compareTranscripts(t, got, want)
	for _, w := range []string{"Project " + tag, "* 2 EXPUNGE", "Subject: delivered"} {
		if !strings.Contains(strings.Join(want, "\n"), w) {
			t.Errorf("the transcript lacks %q: the script tests less than it says", w)
		}
	}
}

func compareTranscripts(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = volatile.ReplaceAllString(got[i], "…")
		}
		if i < len(want) {
			w = volatile.ReplaceAllString(want[i], "…")
		}
		if g != w {
			t.Fatalf("line %d differs:\nsynthesised: %.300q\nstored:      %.300q", i, g, w)
		}
	}
}

// Synthesised messages are generated afresh at every read: twice the same
// bytes, on any connection, after a move too, and the same as the
// driver's own generation of that message.
func TestSynthesisedBytesAreStable(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, _ := load(t, synthScenario, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 2, 11)
	fetch := func(cmds ...string) string {
		return strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", c.password, cmds...), "\n")
	}
	first := fetch("SELECT INBOX", "FETCH 1:* BODY.PEEK[]")
	second := fetch("SELECT INBOX", "FETCH 1:* BODY.PEEK[]")
	if first != second {
		t.Fatal("two FETCHes of the population differ")
	}
	want := string(c.popMessage(nil, 11, 1, c.pop.folders[0], 4))
	one := fetch("SELECT INBOX", "FETCH 5 BODY.PEEK[]")
	if !strings.Contains(strings.ReplaceAll(one, "\n", "\r\n"), want) {
		t.Fatalf("message 5 is not the generator's:\n%.400s", one)
	}
	moved := fetch("SELECT INBOX", "UID MOVE 5 Folder02", "SELECT Folder02", "FETCH 5 BODY.PEEK[]")
	if !strings.Contains(strings.ReplaceAll(moved, "\n", "\r\n"), want) {
		t.Fatalf("message 5 changed in its move:\n%.400s", moved)
	}
	if !strings.Contains(moved, fmt.Sprintf("{%d}", len(want))) {
		t.Fatalf("size after the move: %.200s", moved)
	}
}
