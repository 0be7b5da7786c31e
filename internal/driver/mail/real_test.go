package mail

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/testenv"
)

const realPassword = "mail-driver-test-pw"

// A cached client against Dovecot (which offers CONDSTORE): its first
// log-on remembers UIDVALIDITY, UIDNEXT and HIGHESTMODSEQ; after a
// logoff, its next log-on fetches exactly the messages that arrived and
// the flags that changed meanwhile (FETCH CHANGEDSINCE), not the mailbox.
func TestCachedSyncCondstore(t *testing.T) {
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 2, Password: realPassword})
	t.Setenv(PasswordEnv, realPassword)
	c, acts := load(t, `
users: 2
model: open
phases: {steady: 1m}
mail:
  mode: cached
  idle: false
  population: {inbox: 6, deleted: 0, folders: 0, size: 3KB, sizes: fixed, calendar: 0, contacts: 0}
actions:
  - {name: logoff, rate: 1/s}
`, "imap://"+d.Addr+"?smtp=127.0.0.1:9")
	prepare(t, c, 2, 5)
	s := open(t, c, 1)[0].(*session)
	if s.cacheModseq == 0 || s.cacheNext != 7 || s.validity == 0 {
		t.Fatalf("after the first log-on: modseq %d, uidnext %d, uidvalidity %d", s.cacheModseq, s.cacheNext, s.validity)
	}
	// Behind the client's back: two messages flagged, one new.
	out := mailtest.RawIMAP(t, d.Addr, "user0001", realPassword, "SELECT INBOX", `UID STORE 2,4 +FLAGS (\Flagged)`,
		"APPEND INBOX {12}\r\nSubject: x\r\n")
	if joined := strings.Join(out, "\n"); !strings.Contains(joined, "OK [APPENDUID") {
		t.Fatalf("raw IMAP: %s", joined)
	}
	if _, err := s.Do(context.Background(), acts["logoff"]); err != nil {
		t.Fatal(err)
	}
	if s.syncNew != 1 || s.syncFlags < 2 || s.syncFlags > 3 {
		t.Errorf("log-on sync imapclient.Fetched %d new messages and %d flag changes; want 1 and 2 (3 with the new one)", s.syncNew, s.syncFlags)
	}
	if s.cacheNext != 8 {
		t.Errorf("cached UIDNEXT %d after the sync, want 8", s.cacheNext)
	}
	// Nothing changed: the next sync fetches nothing.
	s.syncNew, s.syncFlags = 0, 0
	if _, err := s.Do(context.Background(), acts["logoff"]); err != nil {
		t.Fatal(err)
	}
	if s.syncNew != 0 || s.syncFlags != 0 {
		t.Errorf("an unchanged mailbox synced %d new, %d flags", s.syncNew, s.syncFlags)
	}
}

// A message to a distribution list is one SMTP recipient that Postfix
// expands (virtual_alias_maps written by testenv from DefaultListAliases):
// every member's INBOX in Dovecot receives it, and the driver, which draws
// the same members, sees every delivery and loses none.
func TestListsFanOutThroughPostfix(t *testing.T) {
	const users = 12
	lists := Lists{Count: 3, Min: 3, Avg: 4, Max: 6}
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: users, Password: realPassword})
	p := testenv.Postfix(t, testenv.PostfixOptions{Dovecot: d, Aliases: DefaultListAliases(lists, users)})
	t.Setenv(PasswordEnv, realPassword)
	c, acts := load(t, fmt.Sprintf(`
users: %d
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 1, deleted: 0, folders: 0, size: 2KB, sizes: fixed, calendar: 0, contacts: 0}
  lists: {count: %d, min: %d, avg: %d, max: %d}
actions:
  - {name: send, rate: 1/s, recipients: 0, lists: 1}
`, users, lists.Count, lists.Min, lists.Avg, lists.Max), "imap://"+d.Addr+"?smtp="+p.Addr)
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, users, 9)
	sender := open(t, c, 1)[0]
	saved := func() int {
		b, _ := os.ReadFile(d.ErrorLog)
		return strings.Count(string(b), "saved mail to INBOX")
	}
	before := saved()
	if _, err := sender.Do(context.Background(), acts["send"]); err != nil {
		t.Fatal(err)
	}
	want := c.track.owedTotal()
	if want < lists.Min {
		t.Fatalf("one message to a list of at least %d members expects %d deliveries", lists.Min, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Drain(ctx)
	if ok, lost := ev.count(driver.OK), ev.count(driver.Lost); ok != want || lost != 0 {
		t.Errorf("driver saw %d deliveries, %d lost; want %d", ok, lost, want)
	}
	if got := saved() - before; got != want {
		t.Errorf("Dovecot saved %d messages, want %d (one per member)", got, want)
	}
	// Postfix received one recipient (the list) and expanded it.
	b, _ := os.ReadFile(p.ErrorLog)
	expanded := regexp.MustCompile(`to=<user\d+@example\.test>, orig_to=<list\d+@example\.test>`).FindAllString(string(b), -1)
	if len(expanded) != want {
		t.Errorf("Postfix logged %d deliveries expanded from a list, want %d:\n%s", len(expanded), want, b)
	}
}

// Submission to Postfix over TLS, both ways: STARTTLS (smtp_tls:
// starttls, port 587's way) and TLS from the first byte (an smtps://
// target, port 465's way). Postfix logs a TLS connection for each (the
// preflight's and the sends'), and the messages reach Dovecot.
func TestTLSThroughPostfix(t *testing.T) {
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 2, Password: realPassword})
	p := testenv.Postfix(t, testenv.PostfixOptions{Dovecot: d, STARTTLS: true, ImplicitTLS: true})
	t.Setenv(PasswordEnv, realPassword)
	for i, target := range []string{"smtp://" + p.Addr, "smtps://" + p.TLSAddr} {
		smtpTLS := "starttls"
		if i == 1 {
			smtpTLS = "tls"
		}
		c, acts := load(t, `
users: 1
closed: {total: 3}
mail:
  smtp_tls: `+smtpTLS+`
  insecure_skip_verify: true
  population: {create: false}
actions:
  - {name: send, to: [user0002@example.test], size: 4KB, sizes: fixed}
`, target)
		if err := c.Preflight(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.Observe(&events{})
		s := open(t, c, 1)[0]
		for range 3 {
			if _, err := s.Do(context.Background(), acts["send"]); err != nil {
				t.Fatalf("%s: %v", target, err)
			}
		}
		want := fmt.Sprintf("MESSAGES %d", 3*(i+1))
		deadline := time.Now().Add(20 * time.Second)
		for {
			out := strings.Join(mailtest.RawIMAP(t, d.Addr, "user0002", realPassword, "STATUS INBOX (MESSAGES)"), " ")
			if strings.Contains(out, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: user0002 after 20 s: %s, want %s", target, out, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		b, _ := os.ReadFile(p.ErrorLog)
		// The preflight's connection and the three sends, each time.
		if n := strings.Count(string(b), "TLS connection established from"); n != 4*(i+1) {
			t.Errorf("%s: Postfix logged %d TLS connections, want %d:\n%s", target, n, 4*(i+1), b)
		}
	}
}

// Population written directly into Dovecot's maildirs (mail.population.
// maildir): Dovecot serves every folder with its count, and a verified
// search finds every populated INBOX message naming its codename.
func TestPopulateMaildirDovecot(t *testing.T) {
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 2, Password: realPassword})
	t.Setenv(PasswordEnv, realPassword)
	owner := fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid())
	if os.Geteuid() == 0 {
		owner = fmt.Sprintf("%d:%d", testenv.DovecotMailUID, testenv.DovecotMailUID)
	}
	c, acts := load(t, `
users: 2
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 30, deleted: 2, folders: 2, folder_messages: 4, size: 6KB, calendar: 0, contacts: 0,
    maildir: "`+d.MailDir+`/%u/Maildir", maildir_owner: "`+owner+`"}
actions:
  - {name: search, rate: 1/s}
`, "imap://"+d.Addr+"?smtp=127.0.0.1:9")
	prepare(t, c, 2, 11)
	if st := c.Stats(); st.Messages != 2*(30+2+8) || !strings.Contains(st.Method, "maildir") {
		t.Fatalf("population %+v", st)
	}
	out := strings.Join(mailtest.RawIMAP(t, d.Addr, "user0002", realPassword, "STATUS INBOX (MESSAGES)",
		`STATUS "Deleted Items" (MESSAGES)`, "STATUS Folder01 (MESSAGES)", "STATUS Folder02 (MESSAGES)"), "\n")
	for _, want := range []string{"INBOX (MESSAGES 30)", `"Deleted Items" (MESSAGES 2)`, "Folder01 (MESSAGES 4)", "Folder02 (MESSAGES 4)"} {
		if !strings.Contains(out, want) {
			t.Errorf("Dovecot lacks %q:\n%s", want, out)
		}
	}
	for _, s := range open(t, c, 2) {
		for range 3 {
			if _, err := s.Do(context.Background(), acts["search"]); err != nil {
				t.Fatalf("search: %v (class %v)", err, driver.Classify(err))
			}
		}
	}
}

// davCount lists a collection (PROPFIND Depth 1) and counts its members
// whose names end in ext.
func davCount(t *testing.T, url, user, pass, ext string) int {
	t.Helper()
	req, _ := http.NewRequest("PROPFIND", url, strings.NewReader(`<?xml version="1.0"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>`))
	req.SetBasicAuth(user, pass)
	req.Header.Set("Depth", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 207 {
		t.Fatalf("PROPFIND %s: %s %s", url, res.Status, b)
	}
	return strings.Count(string(b), ext+"</")
}

// The calendar against Radicale: the population stores each user's
// appointments and contacts (fresh: a second Prepare does not add to
// them); create-appointment adds one, browse-calendar and free-busy are
// answered; a meeting request puts the event on the organiser's calendar
// and mails every attendee the iTIP invitation (METHOD:REQUEST).
func TestCalendarRadicale(t *testing.T) {
	r := testenv.Radicale(t, testenv.RadicaleOptions{Users: 4, Password: realPassword})
	t.Setenv(PasswordEnv, realPassword)
	srv := mailtest.Embedded(t)
	c, acts := load(t, `
users: 4
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 1, deleted: 0, folders: 0, size: 2KB, calendar: 5, contacts: 3}
actions:
  - {name: create-appointment, rate: 1/s}
  - {name: browse-calendar, rate: 1/s, days: 30}
  - {name: free-busy, rate: 1/s, days: 30}
  - {name: meeting-request, rate: 1/s, attendees: 2}
`, srv.URL()+"&caldav="+r.URL+"/")
	c.Provisioner = srv
	prepare(t, c, 4, 2)
	prepare(t, c, 4, 2)
	cal, card := r.URL+"/user0001/calendar/", r.URL+"/user0001/contacts/"
	if n, m := davCount(t, cal, "user0001", realPassword, ".ics"), davCount(t, card, "user0001", realPassword, ".vcf"); n != 5 || m != 3 {
		t.Fatalf("after the population: %d events, %d contacts; want 5 and 3", n, m)
	}
	s := open(t, c, 1)[0]
	for _, name := range []string{"create-appointment", "browse-calendar", "free-busy", "meeting-request"} {
		out, err := s.Do(context.Background(), acts[name])
		// Bytes on the wire: a PUT's answer has no body, but a status line
		// and headers.
		if err != nil || out.BytesIn < int64(len("HTTP/1.1 201 Created\r\n")) || out.BytesOut < int64(len("PUT / HTTP/1.1\r\n")) {
			t.Fatalf("%s: %v, %d bytes in, %d out", name, err, out.BytesIn, out.BytesOut)
		}
	}
	if n := davCount(t, cal, "user0001", realPassword, ".ics"); n != 7 {
		t.Errorf("%d events after an appointment and a meeting, want 7", n)
	}
	invited := 0
	for i := 2; i <= 4; i++ {
		out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), fmt.Sprintf("user%04d", i), realPassword, "SELECT INBOX",
			"SEARCH TEXT \"METHOD:REQUEST\""), "\n")
		if regexp.MustCompile(`\* SEARCH \d`).MatchString(out) {
			invited++
		}
	}
	if invited != 2 {
		t.Errorf("%d attendees received the invitation, want 2", invited)
	}
}
