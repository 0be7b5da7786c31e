package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/capacity/capacitytest"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
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
