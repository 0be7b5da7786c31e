package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
	"github.com/throng-io/throng/internal/textfmt"
)

// mailLossRun runs a mail scenario whose every message owes 2 deliveries
// (to user0001 and user0002) against an embedded server that loses them
// all (a test's fault: nothing is stored), with loss thresholds, and
// returns the exit code, the result and the text report. The server is
// the mail family's embedded one, started by the test: its Target offers
// provisioning (driver.Provisioner), so the run creates its accounts on it.
func mailLossRun(t *testing.T) (int, *result.Run, string) {
	t.Helper()
	srv, err := mailtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Store().SetFaults(func([]byte, []string) []string { return nil })
	prep := newPreparer()
	fam, err := prep.Family("mail")
	if err != nil {
		t.Fatal(err)
	}
	fam.Embedded = func(string) (driver.Target, error) { return keptOpen{srv}, nil }
	dir := t.TempDir()
	file := filepath.Join(dir, "loss.yaml")
	os.WriteFile(file, []byte(`
users: 4
model: open
interval: 500ms
phases: {ramp_up: {duration: 2s}, steady: 3s, drain: 2s}
mail:
  population: {inbox: 2, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}
actions:
  - {name: send, to: [user0001@example.test, user0002@example.test], size: 2KB, sizes: fixed, rate: 2/s}
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := throngWith(t, prep, "run", file, "-q", "-o", out,
		"--threshold", "loss == 0", "--threshold", "all: loss == 0")
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, stdout, stderr)
	}
	_, text, _ := throng(t, "report", out)
	return code, run, text
}

// keptOpen is an embedded mail server a run uses and does not close: the
// test does.
type keptOpen struct{ *mailtarget.Server }

func (keptOpen) Close() error { return nil }

// Lost mail is counted per recipient, whatever the phase: every message
// sent owes 2 deliveries and the server stored none, so the run's loss is
// exactly twice its sends, `all: loss == 0` fails (exit 1), and the
// summary's mail section says it in words.
func TestMailLossPerRecipient(t *testing.T) {
	code, run, text := mailLossRun(t)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	send, deliver := all.Actions[0], all.Actions[1]
	if send.Count == 0 || send.Errors != 0 || deliver.Count != 2*send.Count || deliver.ErrorsByClass["lost"] != 2*send.Count {
		t.Fatalf("%d sends (%d errors), %d deliveries owed, %d lost; want twice the sends", send.Count, send.Errors, deliver.Count, deliver.ErrorsByClass["lost"])
	}
	if code != 1 {
		t.Errorf("exit %d with every message lost, want 1", code)
	}
	for _, o := range run.Thresholds {
		if o.Expr == "loss == 0" && o.Phase == result.All && (o.Pass || float64(o.Value) != float64(2*send.Count)) {
			t.Errorf("all: loss == 0: %+v", o)
		}
	}
	if want := "lost " + textfmt.Num(float64(2*send.Count)) + "; misdelivered 0, duplicated 0"; !strings.Contains(text, want) {
		t.Errorf("the summary lacks %q:\n%s", want, text)
	}
}

// A lost message counts in the phase it was sent in, not in the drain
// where it is found lost: `loss == 0` (the steady phase) fails with the
// steady phase's losses, each phase's loss is twice its sends (within
// one send at each boundary: the driver gives the submission's actual
// start, the engine places the send by its scheduled start), and the
// drain phase has none.
func TestMailLossInThePhaseOfItsSend(t *testing.T) {
	code, run, _ := mailLossRun(t)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	rep := &run.Repetitions[0]
	for _, ph := range []string{"ramp-up", "steady"} {
		s := result.Find(rep.Summaries, ph)
		if s == nil {
			t.Fatalf("no %s phase", ph)
		}
		sends, lost := int(s.Actions[0].Count), int(s.Actions[1].ErrorsByClass["lost"])
		if sends == 0 || lost < 2*sends-4 || lost > 2*sends+4 {
			t.Errorf("%s: %d sends, %d deliveries lost; want twice the sends (within a send at each boundary)", ph, sends, lost)
		}
	}
	if d := result.Find(rep.Summaries, "drain"); d != nil && d.Actions[1].ErrorsByClass["lost"] != 0 {
		t.Errorf("the drain phase counts %d lost deliveries of messages sent before it", d.Actions[1].ErrorsByClass["lost"])
	}
	for _, o := range run.Thresholds {
		if o.Phase == "steady" && (o.Pass || float64(o.Value) == 0) {
			t.Errorf("loss == 0 in the steady phase: %+v", o)
		}
	}
}
