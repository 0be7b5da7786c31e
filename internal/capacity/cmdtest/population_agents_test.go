package cmdtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
)

// `throng capacity --agents` of a family whose data set is costly (files)
// has each agent prepare its share of it once, for the largest load (32
// users, 320 files: 16 users' each), before the first step, and every
// step only checks it, as a search in one process does
// (TestSearchPreparesTheCostlyPopulationOnce): the record says 320 files
// for 32 users, checked before every step; every segment each agent ran
// checked its users' 10 files each and wrote none; no file's
// modification time is after the first step began; and each agent had
// one session for the whole search. The two agents share the target's
// directory (one machine), which they prepare one after the other.
func TestCapacityCommandOverAgentsPreparesThePopulationOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two agents")
	}
	tok := tokenFile(t)
	agents := startAgents(t, 2, tok)
	dir := t.TempDir()
	work := t.TempDir()
	file := filepath.Join(work, "files.yaml")
	src := "name: files-pop\ntarget: file://localhost" + dir + "\nmodel: closed\nusers: 4\ninterval: 250ms\nclosed: {think: 20ms}\n" +
		"phases: {steady: 1s}\nfiles:\n  population: {files: 10, per_user: true, size: 1KB}\nactions:\n  - {name: read, op: read}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "cap.json")
	code, _, stderr := throng(t, "capacity", file, "--out", out, "--slo", "mean < 10s", "--min", "2", "--max", "32",
		"--step-duration", "1s", "--no-warm-up", "--budget", "6", "-q", "--agents", agents[0].addr+","+agents[1].addr, "--token-file", tok)
	rec, err := capacity.ReadRecordFile(out)
	if err != nil {
		t.Fatalf("exit %d, no record: %v\n%s", code, err, stderr)
	}
	t.Logf("exit %d: %s", code, rec.Statement)
	if len(rec.Steps) < 2 {
		t.Fatalf("%d steps, want 2 or more:\n%s", len(rec.Steps), stderr)
	}
	p := rec.Population
	if p == nil {
		t.Fatalf("no population in the record: each step prepared its own\n%s", stderr)
	}
	t.Logf("population: %s (checks %d, failed %d)", p.Why, p.Checks, p.Failed)
	if p.Load != 32 || p.Users != 32 || p.Items != 320 || p.Checks != len(rec.Steps) || p.Failed != 0 {
		t.Errorf("population %+v: want 320 files for 32 users, written once, checked before each of the %d steps", *p, len(rec.Steps))
	}
	first := rec.Steps[0].Run.Meta.StartedAt
	for i, st := range rec.Steps {
		if st.Run == nil || st.Count == 0 || st.Errors != 0 {
			t.Errorf("step %d: run kept %v, %d actions, %d errors", i+1, st.Run != nil, st.Count, st.Errors)
		}
	}
	// What each agent's segments did, from the results they kept.
	segments := 0
	for _, a := range agents {
		err := filepath.WalkDir(a.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || strings.HasPrefix(d.Name(), "agent-") {
				return err
			}
			run, err := result.ReadFile(path)
			if err != nil {
				return nil // not a result (the journal's)
			}
			segments++
			prep := run.Repetitions[0].Preparation
			users := int64(run.Meta.Users) / 2 // its half of the step's
			if prep == nil || prep.Items != 0 || int64(prep.Users) != users || prep.Checked != 10*users {
				t.Errorf("agent %s, %s (%d users of %d): preparation %+v, want %d files checked and none written", a.addr, d.Name(), users, run.Meta.Users, prep, 10*users)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(a.log.String(), " connected\n"); n != 1 {
			t.Errorf("agent %s had %d sessions for the search, want 1:\n%s", a.addr, n, a.log)
		}
	}
	if segments != 2*len(rec.Steps) {
		t.Errorf("%d segments' results kept by the agents, want 2 for each of %d steps", segments, len(rec.Steps))
	}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(filepath.Base(filepath.Dir(path)), "u") {
			return err
		}
		n++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(first) {
			t.Errorf("%s was written at %s, after the first step began (%s): a step wrote the population again", path,
				fi.ModTime().Format(time.RFC3339Nano), first.Format(time.RFC3339Nano))
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 320 {
		t.Errorf("%d files in the population, want 320 (10 for each of 32 users)", n)
	}
}
