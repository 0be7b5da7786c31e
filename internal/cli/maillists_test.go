package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// The case: the server's lists were written for 20 users (as
// `testenv up postfix -users 20` writes them) and the run has 10. Lists
// generated from the run's users differ from the server's: deliveries
// the server never made count lost, copies to members the run did not
// expect misdelivered, and the summary says the lists may differ. The
// same run given the server's lists (mail.lists.file) loses nothing and
// misdelivers nothing, and says that the lists name users beyond its 10,
// whose mail is not tracked.
func TestMailServerListsImported(t *testing.T) {
	const password = "mail-lists-pw"
	lists := mail.Lists{Count: 5, Min: 3, Avg: 5, Max: 8}
	aliases := mail.DefaultListAliases(lists, 20)
	d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 20, Password: password})
	p := testenv.Postfix(t, testenv.PostfixOptions{Dovecot: d, Aliases: aliases})
	t.Setenv(mail.PasswordEnv, password)
	dir := t.TempDir()
	var csv strings.Builder
	var names []string
	for l := range aliases {
		names = append(names, l)
	}
	sort.Strings(names)
	for _, l := range names {
		fmt.Fprintf(&csv, "%s,%s\n", l, strings.Join(aliases[l], ","))
	}
	os.WriteFile(filepath.Join(dir, "server-lists.csv"), []byte(csv.String()), 0o644)
	run := func(listsBlock string) (*result.ActionSummary, *result.ActionSummary, string) {
		t.Helper()
		file := filepath.Join(dir, "lists.yaml")
		os.WriteFile(file, []byte(`
users: 10
model: open
interval: 500ms
phases: {steady: 3s, drain: 15s}
mail:
  population: {inbox: 2, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}
  lists: `+listsBlock+`
actions:
  - {name: send, lists: 1, recipients: 0, size: 2KB, sizes: fixed, rate: 1/s}
`), 0o644)
		out := filepath.Join(dir, "r.json")
		t.Chdir(dir) // the lists file is read from the current directory
		if code, stdout, stderr := throng(t, "run", file, "--target", "imap://"+d.Addr+"?smtp="+p.Addr, "-q", "-o", out); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		r, err := result.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		_, text, _ := throng(t, "report", out)
		a := actions(r)
		deliver, mis := a["deliver"], a["misdeliver"]
		return &deliver, &mis, text
	}
	deliver, mis, text := run(fmt.Sprintf("{count: %d, min: %d, avg: %d, max: %d}", lists.Count, lists.Min, lists.Avg, lists.Max))
	if deliver.Count == 0 || deliver.ErrorsByClass["lost"]+mis.ErrorsByClass["misdelivered"] == 0 {
		t.Errorf("generated lists for 10 users against the server's for 20: %d owed, %d lost, %d misdelivered; want differences",
			deliver.Count, deliver.ErrorsByClass["lost"], mis.ErrorsByClass["misdelivered"])
	}
	if !strings.Contains(text, "Note: if the server's lists differ from the run's (5 lists generated from the number of users") {
		t.Errorf("the summary does not say the lists may differ:\n%s", text)
	}
	deliver, mis, text = run("{file: server-lists.csv}")
	if deliver.Count == 0 || deliver.Errors != 0 || mis.Count != 0 {
		t.Errorf("the server's own lists: %d owed, errors %v, %d misdelivered; want none lost or misdelivered", deliver.Count, deliver.ErrorsByClass, mis.Count)
	}
	if !strings.Contains(text, "Note: the lists name users up to the 20th, and this run has 10: mail to the others is not tracked.") {
		t.Errorf("the summary does not name the members outside the run:\n%s", text)
	}
}
