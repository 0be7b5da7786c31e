package cli

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
	"github.com/throng-io/throng/presets"
)

// The Exchange study's presets, scaled down by their variables: small
// mailboxes, a 1 s log-on ramp, 1 s intervals.
var smallMailboxes = []string{
	"--set", "inbox=20", "--set", "folder_messages=2", "--set", "calendar=2", "--set", "contacts=1", "--size", "8KB",
	"--set", "ramp=1s", "--interval", "1s",
}

// actions returns the run's "all" summary rows by action name.
func actions(run *result.Run) map[string]result.ActionSummary {
	m := map[string]result.ActionSummary{}
	for _, a := range result.Find(run.Repetitions[0].Summaries, result.All).Actions {
		m[a.Name] = a
	}
	return m
}

// The zero-setup command: loadsim-online against the embedded server.
// Mail is delivered and seen, nothing is lost, and the calendar actions
// are counted as skipped (no CalDAV server), never dropped, and apart:
// not in any action count, rate, percentile or error of the run. The report
// states the users and the speedup and warns that profiles are not
// comparable; comparing it with loadsim-cached says so again.
func TestMailEmbeddedLoadSim(t *testing.T) {
	out := filepath.Join(t.TempDir(), "online.json")
	args := append([]string{"run", "loadsim-online", "--users", "20", "--speedup", "600", "--duration", "3s", "-q", "-o", out}, smallMailboxes...)
	if code, stdout, stderr := throng(t, args...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, text, _ := throng(t, "report", out)
	for _, want := range []string{"20 users", "speedup 600x", "Note: results of different user profiles are not comparable", "skipped (not attempted)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	a := actions(run)
	if a["send"].Count == 0 || a["send"].Errors != 0 || a["process-inbox"].Errors != 0 || a["browse"].Errors != 0 {
		t.Fatalf("%+v", a)
	}
	d := a["deliver"]
	if d.Count < a["send"].Count || d.ErrorsByClass["lost"] != 0 {
		t.Errorf("deliver %d (lost %d) for %d sends", d.Count, d.ErrorsByClass["lost"], a["send"].Count)
	}
	calendar := []string{"free-busy", "meeting-request", "create-appointment", "browse-calendar"}
	var skipped uint64
	for _, cal := range calendar {
		s := a[cal]
		if s.Skipped == 0 || s.Count != 0 || s.Errors != 0 || s.RatePerS != 0 || s.Latency.MaxMs != 0 || len(s.ErrorsByClass) != 0 {
			t.Errorf("%s: count %d, skipped %d, errors %d, %v/s, max %v ms: want skipped alone", cal, s.Count, s.Skipped, s.Errors, s.RatePerS, s.Latency.MaxMs)
		}
		skipped += s.Skipped
	}
	for _, ph := range run.Repetitions[0].Summaries {
		var attempted uint64
		for i, s := range ph.Actions[:len(run.Meta.Actions)-len(run.Meta.Events)] {
			if !slices.Contains(calendar, run.Meta.Actions[i]) {
				attempted += s.Count
			}
		}
		if tot := ph.Total; tot.Count != attempted || tot.RatePerS != float64(attempted)/ph.DurationS || tot.Errors != 0 {
			t.Errorf("%s: %d actions at %v/s (%d errors), %d attempted: the skipped are counted", ph.Phase, tot.Count, tot.RatePerS, tot.Errors, attempted)
		}
		if ph.Phase == result.All && ph.Total.Skipped != skipped {
			t.Errorf("all: %d skipped, the actions' add up to %d", ph.Total.Skipped, skipped)
		}
	}
	if run.Meta.Speedup != 600 || run.Meta.Users != 20 || !strings.Contains(run.Meta.Settings["note"], "not comparable") {
		t.Errorf("meta %+v", run.Meta)
	}
	// The population rate is kept in the result: 20 users, each with an
	// Inbox of 20, 1 deleted and 10 folders of 2 (41 messages).
	if p := run.Repetitions[0].Preparation; p == nil || p.Users != 20 || p.Items != 20*41 || p.Bytes < p.Items*500 ||
		p.MBps <= 0 || p.ElapsedS <= 0 || p.Method == "" {
		t.Errorf("preparation %+v", p)
	}
	cached := filepath.Join(t.TempDir(), "cached.json")
	args = append([]string{"run", "loadsim-cached", "--users", "10", "--speedup", "300", "--duration", "2s", "-q", "-o", cached}, smallMailboxes...)
	if code, stdout, stderr := throng(t, args...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, cmp, _ := throng(t, "compare", out, cached)
	for _, want := range []string{"ran different user profiles (actions[0].lists, actions[0].rate, actions[1].rate, actions[1].reply, actions[2].name, actions[2].rate and ",
		"more keys differ): results of different user profiles are not comparable", "settings.mode: online → cached",
		"users 20 vs 10", "different speedups (600x vs 300x)"} {
		if !strings.Contains(cmp, want) {
			t.Errorf("compare lacks %q:\n%s", want, cmp)
		}
	}
}

// mailServers are a Dovecot, a Postfix delivering to it with the Exchange
// study's lists, and a Radicale, sharing the accounts' password.
type mailServers struct {
	d   *testenv.DovecotServer
	p   *testenv.PostfixServer
	r   *testenv.RadicaleServer
	url string
}

func startMailServers(t *testing.T, users int) *mailServers {
	const password = "mail-test-pw"
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: users, Password: password})
	p := testenv.Postfix(t, testenv.PostfixOptions{Dovecot: d,
		Aliases: mail.DefaultListAliases(mail.Lists{Count: 100, Min: 2, Avg: 10, Max: 20}, users)})
	r := testenv.Radicale(t, testenv.RadicaleOptions{Users: users, Password: password})
	t.Setenv(mail.PasswordEnv, password)
	return &mailServers{d: d, p: p, r: r, url: "imap://" + d.Addr + "?smtp=" + p.Addr + "&caldav=" + r.URL + "/"}
}

// lmtpDeliveries counts the deliveries Dovecot logged.
func (m *mailServers) lmtpDeliveries() int {
	b, _ := os.ReadFile(m.d.ErrorLog)
	return strings.Count(string(b), "saved mail to INBOX")
}

// The Exchange study's presets (online and cached) and the Domino study's,
// shortened, against Dovecot + Postfix + Radicale: every delivery Dovecot
// made is seen by a recipient, none is lost, the calendar works, searches
// find what was populated; then the faults.
func TestMailRealServers(t *testing.T) {
	m := startMailServers(t, 20)
	check := func(t *testing.T, run *result.Run, before int) map[string]result.ActionSummary {
		t.Helper()
		a := actions(run)
		for name, s := range a {
			if s.Errors != 0 {
				t.Errorf("%s: %d errors %v", name, s.Errors, s.Messages)
			}
		}
		d := a["deliver"]
		if made := m.lmtpDeliveries() - before; int(d.Count) != made || made == 0 {
			t.Errorf("throng counted %d deliveries, Dovecot made %d", d.Count, made)
		}
		if !m.p.QueueEmpty() {
			t.Error("Postfix still holds mail")
		}
		return a
	}
	t.Run("loadsim-online", func(t *testing.T) {
		before := m.lmtpDeliveries()
		run := runResult(t, append([]string{"run", "loadsim-online", "--target", m.url, "--users", "20", "--speedup", "600", "--duration", "3s"}, smallMailboxes...)...)
		a := check(t, run, before)
		for _, cal := range []string{"free-busy", "meeting-request", "create-appointment", "browse-calendar"} {
			if a[cal].Count == 0 || a[cal].Skipped != 0 {
				t.Errorf("%s against Radicale: %d, %d skipped", cal, a[cal].Count, a[cal].Skipped)
			}
		}
	})
	t.Run("loadsim-cached", func(t *testing.T) {
		before := m.lmtpDeliveries()
		run := runResult(t, append([]string{"run", "loadsim-cached", "--target", m.url, "--users", "20", "--speedup", "600", "--duration", "3s"}, smallMailboxes...)...)
		a := check(t, run, before)
		// IDLE: deliveries are seen as Dovecot announces them.
		if d := a["deliver"]; d.Latency.P50Ms > 3000 || d.Latency.P50Ms <= 0 {
			t.Errorf("delivery latency p50 %.0f ms with IDLE", d.Latency.P50Ms)
		}
		if a["logoff"].Count == 0 {
			t.Error("no logoff")
		}
		// Every log-on is counted: each user's first, and one again after
		// each logoff (again: true), none failed.
		if lo := a[mail.LogonEvent]; lo.Count != 20+a["logoff"].Count || lo.OK != lo.Count {
			t.Errorf("%d log-ons (%d ok) for 20 users and %d logoffs", lo.Count, lo.OK, a["logoff"].Count)
		}
	})
	t.Run("domino-r6", func(t *testing.T) {
		before := m.lmtpDeliveries()
		run := runResult(t, "run", "domino-r6", "--target", m.url, "--users", "8", "--speedup", "240", "--set", "every=100ms",
			"--set", "group=4", "--set", "pause=500ms", "--set", "mail_file=2500KB", "--duration", "3s", "--interval", "1s")
		a := check(t, run, before)
		if s := a["search"]; s.Count < 5 || s.ErrorsByClass["corrupt"] != 0 {
			t.Errorf("search: %d, %v", s.Count, s.Messages)
		}
		// The log-on storm and the steady state are reported apart.
		if r, s := result.Find(run.Repetitions[0].Summaries, "ramp-up"), result.Find(run.Repetitions[0].Summaries, "steady"); r == nil || s == nil || s.Total.Count == 0 {
			t.Errorf("ramp-up %v, steady %v", r != nil, s != nil)
		}
	})
	// Users log on as they arrive (the ramp is the log-on storm) and stay
	// logged on, even when their first action is hours away.
	t.Run("logon-at-start", func(t *testing.T) {
		logins := func() int {
			b, _ := os.ReadFile(m.d.ErrorLog)
			return strings.Count(string(b), "Login: user=<user")
		}
		// Dovecot's log process writes a little after the fact: count once
		// the log has stopped growing (the subtest before logs users on
		// too, as its drain looks for what is still missing).
		settled := func() int {
			n := logins()
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
				time.Sleep(250 * time.Millisecond)
				k := logins()
				if k == n {
					break
				}
				n = k
			}
			return n
		}
		file := filepath.Join(t.TempDir(), "idle.yaml")
		os.WriteFile(file, []byte(`
users: 6
model: open
interval: 500ms
phases: {ramp_up: {duration: 1s}, steady: 1s, drain: 1s}
mail: {population: {create: false}}
actions: [{name: check, rate: 1/h}]
`), 0o644)
		before := settled()
		run := runResult(t, "run", file, "--target", m.url)
		if n := settled() - before; n != 6 || actions(run)["check"].Count > 1 {
			t.Errorf("%d log-ons for 6 users (%d checks)", n, actions(run)["check"].Count)
		}
		// Each log-on is timed and counted where it happened: the six in
		// the ramp-up (the log-on storm), none in the steady state.
		for _, tc := range []struct {
			phase string
			n     uint64
		}{{"ramp-up", 6}, {"steady", 0}, {result.All, 6}} {
			var got result.ActionSummary
			if s := result.Find(run.Repetitions[0].Summaries, tc.phase); s != nil {
				for _, a := range s.Actions {
					if a.Name == mail.LogonEvent {
						got = a
					}
				}
			}
			if got.Count != tc.n || got.OK != tc.n || (tc.n > 0 && got.Latency.P50Ms <= 0) {
				t.Errorf("%s: %d log-ons (%d ok, p50 %.2f ms), want %d", tc.phase, got.Count, got.OK, got.Latency.P50Ms, tc.n)
			}
		}
	})
	t.Run("faults", func(t *testing.T) { mailFaults(t, m) })
}

// Faults against the real servers, each counted in its class with the
// server's words: a wrong password, a mailbox that does not exist, an
// IMAP BAD, a refused message, and Dovecot restarting mid-run (sessions
// log on again; the run goes on and ends on time).
func mailFaults(t *testing.T, m *mailServers) {
	file := filepath.Join(t.TempDir(), "faults.yaml")
	os.WriteFile(file, []byte(`
users: 6
model: open
interval: 500ms
phases: {steady: 6s, drain: 20s}
mail:
  timeout: 5s
  population: {inbox: 10, deleted: 0, folders: 1, folder_messages: 2, size: 5KB, calendar: 0, contacts: 0}
actions:
  - {name: check, rate: 2/s}
  - {name: send, rate: 1/s, recipients: 2}
  - {name: no-such-box, kind: select, mailbox: NoSuchFolder, rate: 0.5/s}
  - {name: bad, kind: command, command: XYZZY, rate: 0.5/s}
  - {name: to-unknown, kind: send, to: [nosuchuser@example.test], rate: 0.5/s}
`), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(2500 * time.Millisecond)
		if err := m.d.Restart(t.Context()); err != nil {
			t.Errorf("restart: %v", err)
		}
	}()
	// The restart reports with t: the test must not end before it does,
	// even when the run below fails it fatally.
	defer func() { <-done }()
	t0 := time.Now()
	// Log-ons that fail while Dovecot restarts are counted (the default
	// threshold would fail the run on them): let them pass here.
	run := runResult(t, "run", file, "--target", m.url, "--threshold", "all: log-on.errors >= 0")
	<-done
	if d := time.Since(t0); d > 45*time.Second {
		t.Errorf("the run took %v", d)
	}
	a := actions(run)
	for _, tc := range []struct{ action, class, text string }{
		{"no-such-box", "status_4xx", "NO Mailbox doesn't exist: NoSuchFolder"},
		{"bad", "protocol", "BAD"},
		{"to-unknown", "status_5xx", "550 5.1.1 <nosuchuser@example.test>: Recipient address rejected"},
	} {
		s := a[tc.action]
		if s.Count == 0 || s.ErrorsByClass[tc.class] == 0 || !strings.Contains(s.Messages[tc.class], tc.text) {
			t.Errorf("%s: count %d, errors %v, messages %v; want %s with %q", tc.action, s.Count, s.ErrorsByClass, s.Messages, tc.class, tc.text)
		}
	}
	// The restart cut sessions: some checks failed (io, dial), the others
	// after it logged on again and worked.
	c := a["check"]
	if c.OK == 0 || c.Errors == 0 || c.Errors > c.Count/2 {
		t.Errorf("check across the restart: %d ok, %d errors %v", c.OK, c.Errors, c.ErrorsByClass)
	}
	for class := range c.ErrorsByClass {
		if class != "io" && class != "dial" && class != "status_5xx" && class != "auth" && class != "timeout" {
			t.Errorf("restart error class %s: %s", class, c.Messages[class])
		}
	}
	// Each user logged on; the restart cut the sessions, and the log-ons
	// again that found Dovecot down are counted, in the restart's classes.
	lr := a[mail.LogonEvent]
	if lr.OK < 6 || lr.Count <= 6 {
		t.Errorf("log-ons across the restart: %d ok of %d %v", lr.OK, lr.Count, lr.ErrorsByClass)
	}
	for class := range lr.ErrorsByClass {
		if class != "io" && class != "dial" && class != "status_5xx" && class != "auth" && class != "timeout" {
			t.Errorf("log-on error class %s across the restart: %s", class, lr.Messages[class])
		}
	}
	steady := result.Find(run.Repetitions[0].Summaries, "steady")
	if steady == nil || steady.Total.OK == 0 {
		t.Error("nothing worked in the steady state")
	}
	// A wrong password: every log-on refused as auth, with Dovecot's words
	// and never the password.
	t.Setenv(mail.PasswordEnv, "wrong-password")
	file2 := filepath.Join(t.TempDir(), "auth.yaml")
	os.WriteFile(file2, []byte(`
users: 2
model: open
phases: {steady: 1s}
mail: {population: {create: false}, timeout: 5s}
actions: [{name: check, rate: 5/s}]
`), 0o644)
	out := filepath.Join(t.TempDir(), "auth.json")
	refused := func() int {
		b, _ := os.ReadFile(m.d.ErrorLog)
		return strings.Count(string(b), "auth failed")
	}
	before := refused()
	code, stdout, stderr := throng(t, "run", file2, "--target", m.url, "-q", "-o", out)
	run2, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	ac := actions(run2)["check"]
	if ac.ErrorsByClass["auth"] == 0 || !strings.Contains(ac.Messages["auth"], "AUTHENTICATIONFAILED") {
		t.Errorf("wrong password: %v %v", ac.ErrorsByClass, ac.Messages)
	}
	// Every log-on Dovecot refused is a failed log-on, class auth, and
	// the family's default threshold fails the run.
	lo := actions(run2)[mail.LogonEvent]
	time.Sleep(time.Second) // Dovecot's log process writes a little after the fact
	if n := refused() - before; lo.Count == 0 || lo.OK != 0 || int(lo.ErrorsByClass["auth"]) != n || !strings.Contains(lo.Messages["auth"], "AUTHENTICATIONFAILED") {
		t.Errorf("wrong password: log-on %d, ok %d, %v %v; Dovecot refused %d", lo.Count, lo.OK, lo.ErrorsByClass, lo.Messages, n)
	}
	var judged bool
	for _, o := range run2.Thresholds {
		if o.Threshold == "all: log-on.errors == 0" && o.Default && !o.Pass {
			judged = true
		}
	}
	if code != ExitThresholds || !judged {
		t.Errorf("wrong password: exit %d, thresholds %+v", code, run2.Thresholds)
	}
	raw, _ := os.ReadFile(out)
	if strings.Contains(string(raw), "wrong-password") || strings.Contains(stdout+stderr, "wrong-password") {
		t.Error("the password is in the result or the output")
	}
}

// The presets carry the studies' figures exactly (docs/studies.md): the
// Exchange study's actions per 8-hour day for both profiles, its users,
// mailboxes and lists, and the Domino study's staged ramp, search every 15 minutes and 25 KB documents in 700 MB
// mail files. A changed figure fails here.
func TestMailPresetFigures(t *testing.T) {
	perDay := func(r float64) float64 { return float64(int(r*8*3600*1000+0.5)) / 1000 }
	for _, tc := range []struct {
		name  string
		mode  string
		rates map[string]float64 // actions per 8 h
	}{
		{"loadsim-online", "online", map[string]float64{"send": 12, "process-inbox": 12, "browse": 20, "free-busy": 1,
			"meeting-request": 1.4, "create-appointment": 2.8, "browse-calendar": 6, "poll-new-mail": 16}},
		{"loadsim-cached", "cached", map[string]float64{"send": 7, "process-inbox": 20, "free-busy": 4,
			"meeting-request": 2, "create-appointment": 4, "browse-calendar": 1, "logoff": 3}},
	} {
		s, err := loadScenario(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, a := range s.Actions {
			got[a.Name] = perDay(a.Rate.PerSecond)
		}
		if !maps.Equal(got, tc.rates) || s.Users != 8000 {
			t.Errorf("%s: %d users, actions per 8 h %v; want 8000 and %v", tc.name, s.Users, got, tc.rates)
		}
		c, errs := mail.Decode(s.DriverConfig, "imap://127.0.0.1:9")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		p, l := c.Population, c.Lists
		if c.Mode != tc.mode || p.Inbox != 100 || p.Deleted != 1 || p.Folders != 10 || p.FolderMessages != 10 ||
			p.Calendar != 25 || p.Contacts != 128 || p.Size != 75_000 || p.Sizes != mail.Realistic ||
			l.Count != 100 || l.Min != 2 || l.Avg != 10 || l.Max != 20 {
			t.Errorf("%s: mode %s, population %+v, lists %+v", tc.name, c.Mode, p, l)
		}
	}
	s, err := loadScenario("domino-r6")
	if err != nil {
		t.Fatal(err)
	}
	// The default is scaled to fit a small machine; the full scale is the
	// study's: 3,000 users in groups of 1,000, one a second, 13-minute
	// pauses, 2 hours steady.
	r := s.Phases.RampUp
	if s.Users != 300 || r.Every.D() != time.Second || r.Group != 100 || r.Pause.D() != time.Minute || s.Phases.Steady.D() != 5*time.Minute {
		t.Errorf("domino-r6: %d users, phases %+v", s.Users, s.Phases)
	}
	if full := presets.FullScale("domino-r6"); full != "throng run domino-r6 --users 3000 --set group=1000 --set pause=13m --duration 2h" {
		t.Errorf("domino-r6 full scale %q", full)
	}
	if full, err := loadScenarioVars("domino-r6", map[string]string{"group": "1000", "pause": "13m"}); err != nil ||
		full.Phases.RampUp.Group != 1000 || full.Phases.RampUp.Pause.D() != 13*time.Minute || full.Phases.RampUp.Every.D() != time.Second {
		t.Errorf("domino-r6 at full scale: %v %+v", err, full.Phases)
	}
	c, errs := mail.Decode(s.DriverConfig, "imap://127.0.0.1:9")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if p := c.Population; p.MailFile != 700_000_000 || p.Size != 25_000 || p.Sizes != mail.Fixed || p.InboxShare != 1 {
		t.Errorf("domino-r6 population %+v", p)
	}
	for _, a := range s.Actions {
		if a.Name == "search" && a.Rate.PerSecond*900 != 1 {
			t.Errorf("domino-r6 searches %g/s, want one per 15 minutes", a.Rate.PerSecond)
		}
	}
}
