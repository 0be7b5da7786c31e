package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/capacity/capacitytest"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/result"
)

// filesSearch is a capacity search of users reading their own 10 files
// of 1 KB in the local directory dir, from 2 to 32 users, whose SLO
// always holds: it grows 2, 8, 32 and ends above --max in three steps.
func filesSearch(t *testing.T, dir string) *Search {
	t.Helper()
	p := &Preparer{Families: []driver.Family{files.Family()}, Version: "v0-test"}
	src := `name: files-pop
model: closed
users: 4
interval: 250ms
closed: {think: 20ms}
phases: {steady: 1s}
files:
  population: {files: 10, per_user: true, size: 1KB}
actions:
  - {name: read, op: read}
`
	s, err := p.NewSearch(Request{Source: source(src), Settings: []Setting{{Key: "target", Value: "file://localhost" + dir}}},
		SearchOptions{SLOs: []string{"mean < 10s"}, Min: 2, Max: 32, StepDuration: time.Second, NoWarmUp: true, MaxSteps: 6})
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	// The files are read in this process: keep its threads from waiting
	// for a CPU (a step the guard finds bound is repeated, not wrong).
	undo, _ := capacitytest.Boost()
	t.Cleanup(undo)
	return s
}

// populationFiles lists the files of the population under dir (its
// marker and uploads aside) with their modification times.
func populationFiles(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(filepath.Base(filepath.Dir(path)), "u") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = fi.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A capacity search of a family whose data set is costly (files)
// prepares it once, for the largest load (32 users, 320 files), before
// the first step, and each step only checks it: no step writes a file
// (each step's preparation says it checked its users' files and wrote
// none, and no file's modification time is after the first step began),
// and the record says so.
func TestSearchPreparesTheCostlyPopulationOnce(t *testing.T) {
	dir := t.TempDir()
	s := filesSearch(t, dir)
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Steps) < 2 {
		t.Fatalf("status %s after %d steps: want two steps or more", rec.Status, len(rec.Steps))
	}
	p := rec.Population
	if p == nil {
		t.Fatal("the record says nothing of a population prepared once")
	}
	if p.Load != 32 || p.Users != 32 || p.Items != 320 || p.Checks != len(rec.Steps) || p.Failed != 0 || !strings.Contains(p.Why, "once, for the largest load, 32 users") {
		t.Errorf("population %+v: want 320 files for 32 users, written once, checked before each of the %d steps", *p, len(rec.Steps))
	}
	first := rec.Steps[0].Run.Meta.StartedAt
	for i, st := range rec.Steps {
		prep := st.Run.Repetitions[0].Preparation
		users := int64(st.Request.Load)
		if prep == nil || prep.Items != 0 || prep.Checked != 10*users {
			t.Errorf("step %d (%d users): preparation %+v, want %d files checked and none written", i+1, users, prep, 10*users)
		}
	}
	got := populationFiles(t, dir)
	if len(got) != 320 {
		t.Errorf("%d files in the population, want 320 (10 for each of 32 users)", len(got))
	}
	for path, mt := range got {
		if mt.After(first) {
			t.Errorf("%s was written at %s, after the first step began (%s): a step wrote the population again", path, mt.Format(time.RFC3339Nano), first.Format(time.RFC3339Nano))
			break
		}
	}
}

// A population removed between two steps is found by the next step's
// check: that step could not run (said in words, and counted in the
// record), and the search, which runs it again, ends could-not-run.
func TestSearchFindsThePopulationGone(t *testing.T) {
	dir := t.TempDir()
	s := filesSearch(t, dir)
	var warned []string
	s.Warn = func(msg string) { warned = append(warned, msg) }
	s.OnStep = func(n int, rec *capacity.Record) {
		if n != 1 {
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != capacity.CouldNotRun || len(rec.Steps) < 2 {
		t.Fatalf("status %s after %d steps, want could-not-run after the first", rec.Status, len(rec.Steps))
	}
	if rec.Steps[0].Run == nil {
		t.Errorf("step 1, before the removal, did not run: %v", rec.Steps[0].Invalid)
	}
	for i, st := range rec.Steps[1:] {
		if st.Verdict != capacity.VerdictInvalid || st.Run != nil {
			t.Errorf("step %d, after the removal: verdict %s, run kept %v: want invalid, nothing run", i+2, st.Verdict, st.Run != nil)
		}
	}
	if p := rec.Population; p == nil || p.Failed != len(rec.Steps)-1 || p.Checks != len(rec.Steps) {
		t.Errorf("population %+v: want %d checks, all but the first failed", p, len(rec.Steps))
	}
	if len(warned) == 0 || !strings.Contains(warned[0], "the population prepared for the search is gone") {
		t.Errorf("warnings %q: want the step's check to say the population is gone", warned)
	}
}

// PopulationError wraps what the check found.
func TestPopulationErrorUnwraps(t *testing.T) {
	base := errors.New("gone")
	err := fmt.Errorf("run: %w", &PopulationError{Repetition: 0, Err: base})
	var pe *PopulationError
	if !errors.As(err, &pe) || !errors.Is(err, base) || !strings.Contains(err.Error(), "repetition 1: gone") {
		t.Errorf("%v", err)
	}
}

// countingMail is the embedded mail server, counting the accounts'
// provisioning and the mailboxes it is asked to synthesize (a
// population's writing), by user.
type countingMail struct {
	driver.Target
	mu         sync.Mutex
	provisions int
	synth      map[string]int
}

func (c *countingMail) Provision(users []string, password string, lists map[string][]string) error {
	c.mu.Lock()
	c.provisions++
	c.mu.Unlock()
	return c.Target.(driver.Provisioner).Provision(users, password, lists)
}

func (c *countingMail) Synthesize(user, mailbox string, count int, date time.Time, flags []string, gen func(dst []byte, j int) []byte) (uint32, uint32, error) {
	c.mu.Lock()
	c.synth[user]++
	c.mu.Unlock()
	return c.Target.(mail.Synthesizer).Synthesize(user, mailbox, count, date, flags, gen)
}

func (c *countingMail) counts() (provisions, mailboxes, users int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.synth {
		mailboxes += n
	}
	return c.provisions, mailboxes, len(c.synth)
}

// mailSearch is a capacity search of 2 to 16 mail users, each with 10
// messages in the INBOX, checking their mail, against the embedded mail
// server (counted), whose SLO always holds.
func mailSearch(t *testing.T) (*Search, *countingMail) {
	t.Helper()
	fam := mail.Family()
	srv, err := fam.Embedded("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cm := &countingMail{Target: srv, synth: map[string]int{}}
	p := &Preparer{Families: []driver.Family{fam}, Version: "v0-test"}
	src := `name: mail-pop
model: open
users: 4
interval: 250ms
phases: {steady: 1s}
mail:
  timeout: 5s
  population: {inbox: 10, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}
actions:
  - {name: check, rate: 4/s}
`
	s, err := p.NewSearch(Request{Source: source(src), Target: &Target{t: cm, family: "mail", embedded: true}},
		SearchOptions{SLOs: []string{"mean < 10s"}, Vary: "users", Min: 2, Max: 16, StepDuration: time.Second, NoWarmUp: true, MaxSteps: 6})
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	undo, _ := capacitytest.Boost()
	t.Cleanup(undo)
	return s, cm
}

// The mail family's population, prepared once for the largest load: the
// embedded server is asked for its 16 accounts once and for each of the
// 16 users' mailboxes once, before the first step; no step asks again,
// each checking its users' mailboxes instead (they log on).
func TestSearchPreparesTheMailPopulationOnce(t *testing.T) {
	s, cm := mailSearch(t)
	var atStart [3]int
	s.OnStart = func(n int, _ capacity.Request) {
		if n == 1 {
			atStart[0], atStart[1], atStart[2] = cm.counts()
		}
	}
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prov, boxes, users := cm.counts()
	if atStart != [3]int{1, boxes, 16} || prov != 1 || users != 16 {
		t.Errorf("before the first step: %d provisioning, %d mailboxes of %d users; at the end %d, %d of %d: want 1 provisioning and 16 users' mailboxes, all before the first step",
			atStart[0], atStart[1], atStart[2], prov, boxes, users)
	}
	p := rec.Population
	if p == nil || p.Load != 16 || p.Users != 16 || p.Items != 160 || p.Checks != len(rec.Steps) || p.Failed != 0 {
		t.Fatalf("population %+v: want 160 messages for 16 users, checked before each of the %d steps", p, len(rec.Steps))
	}
	for i, st := range rec.Steps {
		prep := st.Run.Repetitions[0].Preparation
		if users := int64(st.Request.Load); prep == nil || prep.Items != 0 || prep.Checked != users {
			t.Errorf("step %d (%d users): preparation %+v, want %d mailboxes checked and no message written", i+1, users, prep, users)
		}
		if st.Count == 0 || st.Errors != 0 {
			t.Errorf("step %d: %d actions, %d errors", i+1, st.Count, st.Errors)
		}
	}
}

// Mail accounts removed between two steps are found by the next step's
// check: it could not run, and the search ends could-not-run.
func TestSearchFindsTheMailPopulationGone(t *testing.T) {
	s, cm := mailSearch(t)
	s.OnStep = func(n int, _ *capacity.Record) {
		if n == 1 {
			cm.Target.(driver.Provisioner).Provision([]string{"someone-else"}, "secret", nil)
		}
	}
	var warned []string
	s.Warn = func(msg string) { warned = append(warned, msg) }
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != capacity.CouldNotRun || rec.Steps[0].Run == nil || rec.Population == nil || rec.Population.Failed != len(rec.Steps)-1 {
		t.Fatalf("status %s after %d steps (population %+v): want could-not-run, every step after the first failing its check", rec.Status, len(rec.Steps), rec.Population)
	}
	if len(warned) == 0 || !strings.Contains(warned[0], "the population prepared for the search") {
		t.Errorf("warnings %q: want the step's check to say what is gone", warned)
	}
}

// A search over agents (Distribute) of a family whose data set is costly
// has the agents prepare it once, for the largest load, before the first
// step (DistributePopulation, called once with the load --max), and tells
// every step's agents to keep it; an agent's run that finds it gone (a
// *PopulationError) makes the step could-not-run, counted in the record,
// and the search, which runs it again, ends could-not-run.
func TestSearchOverAgentsKeepsThePopulation(t *testing.T) {
	s := filesSearch(t, t.TempDir())
	var calls []string
	s.DistributePopulation = func(ctx context.Context, req Request) ([]driver.Preparation, error) {
		last := req.Settings[len(req.Settings)-1]
		calls = append(calls, "prepare "+last.Key+"="+last.Value)
		return []driver.Preparation{{Users: 16, Items: 160, Bytes: 160000, Method: "m"}, {Users: 16, Items: 160, Bytes: 160000, Method: "m"}}, nil
	}
	s.Distribute = func(ctx context.Context, req Request, keep bool) (*result.Run, error) {
		calls = append(calls, fmt.Sprint("run keep=", keep))
		return nil, &PopulationError{Err: errors.New("agent a (segment 2/2): the population prepared for the search is gone")}
	}
	var warned []string
	s.Warn = func(msg string) { warned = append(warned, msg) }
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%q", calls)
	if len(calls) < 2 || calls[0] != "prepare users=32" || calls[1] != "run keep=true" || strings.Count(strings.Join(calls, ";"), "prepare") != 1 {
		t.Errorf("calls %q: want the data set prepared once for 32 users, then every step keeping it", calls)
	}
	p := rec.Population
	if p == nil || p.Load != 32 || p.Users != 32 || p.Items != 320 || p.Checks != len(rec.Steps) || p.Failed != len(rec.Steps) {
		t.Fatalf("population %+v after %d steps: want 320 items for 32 users, every step's check failed", p, len(rec.Steps))
	}
	if rec.Status != capacity.CouldNotRun || len(warned) == 0 || !strings.Contains(warned[0], "is gone") {
		t.Errorf("status %s, warnings %q: want could-not-run, the agents' finding said", rec.Status, warned)
	}
}
