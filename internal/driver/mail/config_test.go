package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/scenario"

	"github.com/throng-io/throng/internal/driver/mail/smtpclient"
)

const target = "imap://127.0.0.1:9?smtp=127.0.0.1:9"

// decodeAll decodes a scenario and compiles its actions, returning every
// problem as text.
func decodeAll(t *testing.T, src, tgt string) (*Config, string) {
	t.Helper()
	s, err := scenario.Decode("s.yaml", []byte(src), []string{"web", Name})
	if err != nil {
		return nil, err.Error()
	}
	c, errs := Decode(s.DriverConfig, tgt)
	for _, a := range s.Actions {
		if len(errs) > 0 {
			break
		}
		_, aerrs := c.Compile(a)
		errs = append(errs, aerrs...)
	}
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return c, b.String()
}

func TestDecodeErrors(t *testing.T) {
	t.Setenv("THRONG_TEST_UNSET_VAR", "")
	os.Unsetenv("THRONG_TEST_UNSET_VAR")
	for _, tc := range []struct {
		name, block, action, want string
	}{
		{"mode", "mode: offline", "{name: check}", `s.yaml:3:3: mail.mode: mode "offline": want online or cached`},
		{"auth", "auth: kerberos", "{name: check}", "want login or plain"},
		{"format", "user_format: user", "{name: check}", "want one %d verb"},
		{"unknown key", "modee: online", "{name: check}", `unknown key "modee" (did you mean "mode"?)`},
		{"population key", "population: {inbx: 3}", "{name: check}", `unknown key "inbx"`},
		{"sizes", "population: {sizes: huge}", "{name: check}", `sizes "huge": want realistic or fixed`},
		{"share", "population: {mail_file: 1MB, inbox_share: 140%}", "{name: check}", "bad share"},
		{"lists", "lists: {count: 3, min: 5, avg: 2, max: 9}", "{name: check}", "want 1 <= min <= avg <= max"},
		{"password env", "password: ${THRONG_TEST_UNSET_VAR}", "{name: check}", "environment variable THRONG_TEST_UNSET_VAR is not set"},
		{"caldav", "caldav: ftp://x", "{name: check}", "want an http:// or https:// URL"},
		{"kind", "mode: online", "{name: fly}", `kind "fly" is not a mail action`},
		{"action key", "mode: online", "{name: send, recipientz: 3}", `unknown key "recipientz" (did you mean "recipients"?)`},
		{"key of another kind", "mode: online", "{name: search, recipients: 3}", `unknown key "recipients"`},
		{"lists without lists", "mode: online", "{name: send, lists: 1}", "needs mail.lists (count, file or members)"},
		{"move+delete", "mode: online", "{name: process-inbox, move: 60%, delete: 50%}", "move + delete is above 100%"},
		{"raw logout", "mode: online", "{name: x, kind: command, command: LOGOUT}", "would change the session's state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "users: 1\nmail:\n  " + tc.block + "\nactions:\n  - " + tc.action + "\n"
			_, got := decodeAll(t, src, target)
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		target, decodeErr, preflightErr, smtp string
	}{
		{target: "imap://127.0.0.1:10143?smtp=127.0.0.1:10025", smtp: "127.0.0.1:10025"},
		{target: "imap://127.0.0.1:10143?smtp=127.0.0.1:10025&caldav=http://127.0.0.1:1/", smtp: "127.0.0.1:10025"},
		{target: "imap://u:p@127.0.0.1:10143", decodeErr: "holds credentials"},
		{target: "imap://127.0.0.1:10143?smpt=x:1", decodeErr: `unknown parameter "smpt"`},
		{target: "http://127.0.0.1:9", preflightErr: "needs an imap:// or imaps:// URL"},
	} {
		_, got := decodeAll(t, "users: 1\nactions: [{name: check}]\n", tc.target)
		if tc.decodeErr == "" && got != "" || !strings.Contains(got, tc.decodeErr) {
			t.Errorf("%s: decode %q, want %q", tc.target, got, tc.decodeErr)
			continue
		}
		if tc.decodeErr != "" {
			continue
		}
		s, _ := scenario.Decode("s.yaml", []byte("users: 1\nactions: [{name: check}]\n"), []string{"web", Name})
		c, _ := Decode(s.DriverConfig, tc.target)
		if tc.preflightErr != "" {
			if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), tc.preflightErr) {
				t.Errorf("%s: preflight %v, want %q", tc.target, err, tc.preflightErr)
			}
			continue
		}
		if c.smtpAddr != tc.smtp {
			t.Errorf("%s: smtp %q", tc.target, c.smtpAddr)
		}
	}
}

// The password comes from the block's reference, the environment or the
// default, and never shows in Describe.
func TestPasswordSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("from-file\n"), 0o600)
	t.Setenv(PasswordEnv, "from-env")
	for _, tc := range []struct{ block, want string }{
		{"mode: online", "from-env"},
		{`password: "${file:` + file + `}"`, "from-file"},
		{"password: literal-pw", "literal-pw"},
	} {
		src := "users: 1\nmail:\n  " + tc.block + "\nactions: [{name: check}]\n"
		c, errs := decodeAll(t, src, target)
		if errs != "" {
			t.Fatal(errs)
		}
		if c.password != tc.want {
			t.Errorf("%q: password %q, want %q", tc.block, c.password, tc.want)
		}
		for k, v := range c.Describe() {
			if strings.Contains(v, tc.want) {
				t.Errorf("Describe()[%s] = %q shows the password", k, v)
			}
		}
	}
	os.Unsetenv(PasswordEnv)
	c, _ := decodeAll(t, "users: 1\nactions: [{name: check}]\n", target)
	if c.password != DefaultPassword {
		t.Errorf("default password %q", c.password)
	}
}

func TestUserNamesAndAddresses(t *testing.T) {
	c, _ := decodeAll(t, "users: 1\nmail: {lists: {count: 3, min: 1, avg: 2, max: 3}}\nactions: [{name: check}]\n", target)
	if c.UserName(0) != "user0001" || c.Address(41) != "user0042@example.test" {
		t.Errorf("%s %s", c.UserName(0), c.Address(41))
	}
	for _, tc := range []struct {
		addr string
		id   int
		ok   bool
	}{{"user0042@example.test", 41, true}, {"user0042@EXAMPLE.test", 41, true}, {"user42@example.test", 0, false},
		{"user0042@other.test", 0, false}, {"list001@example.test", 0, false}, {"nosuchuser@example.test", 0, false}} {
		id, ok := c.userID(tc.addr)
		if ok != tc.ok || (ok && id != tc.id) {
			t.Errorf("userID(%s) = %d, %v", tc.addr, id, ok)
		}
	}
	if k, ok := c.listIndex("list002@example.test", 10); !ok || k != 1 {
		t.Errorf("listIndex: %d %v", k, ok)
	}
	if _, ok := c.listIndex("list004@example.test", 10); ok {
		t.Error("list004 of 3 lists")
	}
}

// scanNumber reads n from exactly what fmt.Sprintf(format, n) prints, and
// nothing else ("%0d" too, and numbers wider than the width: user10000,
// which fmt.Sscanf reads as 1000).
func TestScanNumberReadsWhatSprintfPrints(t *testing.T) {
	for _, f := range []string{"user%04d", "u%d", "list%03d", "a%2db", "%d", "x%0d"} {
		printed := map[string]int{}
		for n := range 200_000 {
			printed[fmt.Sprintf(f, n)] = n
		}
		inputs := []string{"", "user", "user12", "user00012", "user0012", "user+012", "user-012", "user0x12",
			"user0012x", "u012", "u-1", "a 5b", "a5b", "a05b", "a 05b", "list000", "list1000", "0", "00", "x0", "x00",
			"user 012", "a  5b", "a10000b", "user10000", "user123456"}
		for _, n := range []int{0, 1, 9, 10, 12, 99, 100, 999, 1000, 1234, 9999, 10000, 123456} {
			inputs = append(inputs, fmt.Sprintf(f, n))
		}
		for s, n := range printed {
			if n%997 == 0 {
				inputs = append(inputs, s)
			}
		}
		for _, s := range inputs {
			want, wantOK := printed[s]
			got, ok := scanNumber(f, s)
			if ok != wantOK || (ok && got != want) {
				t.Errorf("scanNumber(%q, %q) = %d, %v; want %d, %v", f, s, got, ok, want, wantOK)
			}
		}
	}
}

// smtp_engine: epoll by default for plain SMTP on Linux, goroutines with
// TLS; epoll with TLS and unknown values are refused where they are.
func TestSMTPEngineSetting(t *testing.T) {
	for _, tc := range []struct{ mail, engine, err string }{
		{"{}", map[bool]string{true: smtpEngineEpoll, false: smtpEngineGoroutines}[smtpclient.LoopSupported], ""},
		{"{smtp_tls: starttls}", smtpEngineGoroutines, ""},
		{"{smtp_engine: goroutines}", smtpEngineGoroutines, ""},
		{"{smtp_engine: uring}", "", `s.yaml:2:8: mail.smtp_engine: smtp_engine "uring": want epoll or goroutines`},
	} {
		c, errs := decodeAll(t, "users: 1\nmail: "+tc.mail+"\nactions: [{name: send}]\n", "smtp://127.0.0.1:25")
		if tc.err != "" {
			if !strings.Contains(errs, tc.err) {
				t.Errorf("%s: %q, want %q", tc.mail, errs, tc.err)
			}
			continue
		}
		if errs != "" || c.SMTPEngine != tc.engine || c.Describe()["smtp_engine"] != tc.engine {
			t.Errorf("%s: engine %q, errors %q; want %q", tc.mail, c.SMTPEngine, errs, tc.engine)
		}
	}
	if smtpclient.LoopSupported {
		if _, errs := decodeAll(t, "users: 1\nmail: {smtp_engine: epoll, smtp_tls: tls}\nactions: [{name: send}]\n", "smtp://127.0.0.1:25"); !strings.Contains(errs, "smtp_engine epoll speaks plain SMTP only; with smtp_tls tls use goroutines") {
			t.Errorf("epoll with TLS: %q", errs)
		}
	}
}
