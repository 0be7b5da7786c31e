package files

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
)

// outside is a directory beside a test's target, with a file that nothing
// may change; snapshot and unchanged check it.
type outside struct {
	dir    string
	victim string
	before map[string][]byte
}

func newOutside(t *testing.T) *outside {
	t.Helper()
	o := &outside{dir: t.TempDir()}
	o.victim = filepath.Join(o.dir, "victim")
	if err := os.WriteFile(o.victim, []byte("precious, not throng's"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.snapshot(t)
	return o
}

// snapshot records what the directory holds now.
func (o *outside) snapshot(t *testing.T) {
	t.Helper()
	o.before = map[string][]byte{}
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(o.dir, e.Name()))
		o.before[e.Name()] = b
	}
}

// unchanged fails the test when a file outside was written, created or
// removed.
func (o *outside) unchanged(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir(o.dir)
	if len(ents) != len(o.before) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("outside the target: %v, before %d files", names, len(o.before))
	}
	for name, want := range o.before {
		if b, err := os.ReadFile(filepath.Join(o.dir, name)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("outside the target, %s was changed or removed (%d bytes, %v)", name, len(b), err)
		}
	}
}

func isLinkRefusal(err error, name string) bool {
	return err != nil && strings.Contains(err.Error(), name) && strings.Contains(err.Error(), "symbolic link")
}

// A link planted in place of a population file (to a file outside) made
// Prepare write the population through it, over the file it pointed to.
// Now Prepare refuses, naming the file; with reuse too (the listing sees
// a file of the wrong size and would write it again).
func TestPrepareRefusesAPlantedFileLink(t *testing.T) {
	t.Parallel()
	for _, reuse := range []bool{false, true} {
		dir := t.TempDir()
		o := newOutside(t)
		spec := "  population: {files: 4}\n"
		if reuse {
			spec += "  reuse: true\n"
		}
		c, _ := prepared(t, "file://"+dir, 1, spec, "{op: copy-down}")
		plant := filepath.Join(dir, "f00000001.bin")
		os.Remove(plant)
		if err := os.Symlink(o.victim, plant); err != nil {
			t.Fatal(err)
		}
		err := c.Prepare(context.Background(), population(1))
		if !isLinkRefusal(err, "f00000001.bin") || !strings.Contains(err.Error(), "file://"+dir) {
			t.Errorf("reuse %v: Prepare: %v", reuse, err)
		}
		o.unchanged(t)
	}
}

// A link planted in place of a population directory (to a directory
// outside): Prepare wrote the directory's files there. Now refused.
func TestPrepareRefusesAPlantedDirectoryLink(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"outside", "climbing"} {
		dir := t.TempDir()
		o := newOutside(t)
		c, _ := prepared(t, "file://"+dir, 1, "  population: {files: 4, tree: {depth: 1, width: 2}}\n", "{op: copy-down}")
		d01 := filepath.Join(dir, "d01")
		os.RemoveAll(d01)
		to := o.dir
		if target == "climbing" {
			// A relative link that climbs out: ../NAME-of-outside.
			rel, err := filepath.Rel(dir, o.dir)
			if err != nil {
				t.Fatal(err)
			}
			to = rel
		}
		if err := os.Symlink(to, d01); err != nil {
			t.Fatal(err)
		}
		err := c.Prepare(context.Background(), population(1))
		if !isLinkRefusal(err, "d01") {
			t.Errorf("%s: Prepare: %v", target, err)
		}
		o.unchanged(t)
	}
}

// Links swapped in between Prepare and the run: every action refuses the
// link (class status_4xx, naming the file and why) and touches nothing
// outside; no action reads what is outside either (the outside holds a
// faithful copy of the population file, which the old code read and
// passed as good).
func TestActionsRefuseLinksSwappedInAfterPrepare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := newOutside(t)
	c, acts := prepared(t, "file://"+dir, 1, "  population: {files: 4, tree: {depth: 1, width: 2}}\n",
		"{op: copy-down}", "{op: read, pick: next}", "{op: write, pick: next}", "{op: stat, pick: next}",
		"{op: open, pick: next}", "{op: rename, pick: next}", "{op: delete}", "{op: walk, pick: next}", "{op: copy-up}")
	// d01 (files 1 and 3) becomes a link to the outside, which holds the
	// same files; file 0 (in d00) a link to the victim.
	for _, name := range []string{"f00000001.bin", "f00000003.bin"} {
		b, err := os.ReadFile(filepath.Join(dir, "d01", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(o.dir, name), b, 0o644)
	}
	os.RemoveAll(filepath.Join(dir, "d01"))
	os.Symlink(o.dir, filepath.Join(dir, "d01"))
	os.Remove(filepath.Join(dir, "d00", "f00000000.bin"))
	os.Symlink(o.victim, filepath.Join(dir, "d00", "f00000000.bin"))
	// The user's upload directory becomes a link to the outside.
	up := filepath.Join(dir, uploadsDir, "u0000")
	os.RemoveAll(up)
	os.Symlink(o.dir, up)
	o.snapshot(t)

	// Every "next" sweep of user 0 of 1 goes 0, 1, 2, 3: file 0 is a
	// link, file 1 behind one, 2 is a plain file. rename and delete work
	// on a link itself, never on what it points to: on file 0 they
	// succeed (the outside is checked below), rename back included.
	for i, a := range acts[:7] {
		s := open(t, c, 0, 1)
		for _, name := range []string{"f00000000.bin", "d01/f00000001.bin"} {
			_, err := s.Do(context.Background(), a)
			if name == "f00000000.bin" && i >= 5 {
				if err != nil {
					t.Errorf("action %d on the link itself: %v", i, err)
				}
				continue
			}
			if driver.Classify(err) != driver.Status4xx || !isLinkRefusal(err, name) {
				t.Errorf("action %d on %s: %v (class %v)", i, name, err, driver.Classify(err))
			}
		}
		if _, err := s.Do(context.Background(), a); err != nil {
			t.Errorf("action %d on the plain file f00000002.bin: %v", i, err)
		}
	}
	// walk: the tree's directories are "", d00, d01 (a link).
	s := open(t, c, 0, 1)
	var walkErrs []error
	for range 3 {
		if _, err := s.Do(context.Background(), acts[7]); err != nil {
			walkErrs = append(walkErrs, err)
		}
	}
	// The top lists d01, a link its stat refuses; d00 is plain (delete
	// removed the link f00000000.bin); d01 cannot be listed.
	if len(walkErrs) != 2 || !isLinkRefusal(walkErrs[0], "stat d01") || !isLinkRefusal(walkErrs[1], "list d01") {
		t.Errorf("walk: %v", walkErrs)
	}
	if _, err := s.Do(context.Background(), acts[8]); !isLinkRefusal(err, uploadsDir+"/u0000") {
		t.Errorf("copy-up into a linked directory: %v", err)
	}
	o.unchanged(t)

	// The next Prepare refuses the population's linked directory.
	err := c.Prepare(context.Background(), population(1))
	if !isLinkRefusal(err, "d01") {
		t.Errorf("Prepare: %v", err)
	}
	o.unchanged(t)
}

// write_to: a link planted where a copy is written is refused; the file it
// points to keeps its bytes.
func TestWriteToRefusesALink(t *testing.T) {
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	o := newOutside(t)
	c, acts := prepared(t, "file://"+dir, 1, "  population: {files: 2, tree: {depth: 1, width: 2}}\n  write_to: "+out+"\n", "{op: copy-down}")
	os.Symlink(o.victim, filepath.Join(out, "d00", "f00000000.bin"))
	os.RemoveAll(filepath.Join(out, "d01"))
	os.Symlink(o.dir, filepath.Join(out, "d01"))
	s := open(t, c, 0, 1)
	for _, name := range []string{"d00/f00000000.bin", "d01/f00000001.bin"} {
		_, err := s.Do(context.Background(), acts[0])
		if driver.Classify(err) != driver.Other || !isLinkRefusal(err, name) {
			t.Errorf("%s: %v (class %v)", name, err, driver.Classify(err))
		}
	}
	o.unchanged(t)
	// And Prepare's directories for write_to do not go through the link.
	if err := c.Prepare(context.Background(), population(1)); err == nil || !strings.Contains(err.Error(), "write_to") || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Prepare: %v", err)
	}
	o.unchanged(t)
}
