package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/fsroot"
	"github.com/throng-io/throng/internal/testenv"
)

// prepared decodes, compiles and prepares a population for users users.
func prepared(t *testing.T, target string, users int, files string, actions ...string) (*Config, []driver.Action) {
	t.Helper()
	c, acts := decode(t, target, files, actions...)
	if err := c.Prepare(context.Background(), population(users)); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return c, acts
}

func population(users int) driver.Population {
	p := driver.Population{TotalUsers: users, Seed: 1}
	for u := range users {
		p.Users = append(p.Users, u)
	}
	return p
}

func open(t *testing.T, c *Config, u, users int) driver.Session {
	t.Helper()
	s, err := c.Open(context.Background(), driver.User{ID: u, Users: users, Seed: uint64(100 + u)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// do runs action a n times and returns the outcomes' bytes and the errors
// by class.
func do(t *testing.T, s driver.Session, a driver.Action, n int) (in, out int64, errs map[driver.Class][]error) {
	t.Helper()
	errs = map[driver.Class][]error{}
	for range n {
		o, err := s.Do(context.Background(), a)
		in += o.BytesIn
		out += o.BytesOut
		if err != nil {
			c := driver.Classify(err)
			errs[c] = append(errs[c], err)
		}
	}
	return in, out, errs
}

func TestLocalCopyDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, acts := prepared(t, "file://"+dir, 3, "  population: {files: 30, tree: {depth: 1, width: 4}}\n", "{op: copy-down}")
	var total int64
	for u := range 3 {
		in, _, errs := do(t, open(t, c, u, 3), acts[0], 10)
		if len(errs) > 0 {
			t.Fatalf("user %d: %v", u, errs)
		}
		total += in
	}
	if total != 30*20488 {
		t.Errorf("copied %d bytes, want %d", total, 30*20488)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "d02"))
	if len(ents) != 7 { // files 2, 6, ..., 26
		t.Errorf("d02 holds %d files", len(ents))
	}
}

// Prepare writes the same bytes for the same seed, other bytes for another.
func TestPopulationDeterminism(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	spec := "  population: {files: 5, distribution: uniform, min: 100, max: 5000}\n"
	prepared(t, "file://"+a, 1, spec, "{op: copy-down}")
	prepared(t, "file://"+b, 1, spec, "{op: copy-down}")
	for i := range 5 {
		name := filepath.Join("f0000000" + string(rune('0'+i)) + ".bin")
		x, err1 := os.ReadFile(filepath.Join(a, name))
		y, err2 := os.ReadFile(filepath.Join(b, name))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) || len(x) < 100 || len(x) > 5000 {
			t.Errorf("%s: %d and %d bytes, equal %v (%v %v)", name, len(x), len(y), bytes.Equal(x, y), err1, err2)
		}
	}
	c, _ := decode(t, "file://"+t.TempDir(), spec, "{op: copy-down}")
	pop := population(1)
	pop.Seed = 2
	if err := c.Prepare(context.Background(), pop); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(filepath.Join(a, "f00000000.bin"))
	y, _ := os.ReadFile(filepath.Join(c.tgt.root, "f00000000.bin"))
	if bytes.Equal(x, y) {
		t.Error("seeds 1 and 2 wrote the same file")
	}
}

// Every copied byte is checked: a changed, short or long file is corrupt,
// counted apart from the others; a removed file is an error of its own.
func TestLocalCorruptAndMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, acts := prepared(t, "file://"+dir, 1, "  population: {files: 6}\n", "{op: copy-down}", "{op: stat, pick: next}",
		"{op: read, pick: next}")
	path := func(i int) string { return filepath.Join(dir, "f0000000"+string(rune('0'+i))+".bin") }
	b, _ := os.ReadFile(path(1))
	b[20000] ^= 1
	os.WriteFile(path(1), b, 0o644)
	os.Truncate(path(2), 20000)
	f, _ := os.OpenFile(path(3), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("x"))
	f.Close()
	os.Remove(path(4))
	s := open(t, c, 0, 1)
	var classes []string
	var msgs []string
	for range 6 {
		_, err := s.Do(context.Background(), acts[0])
		classes = append(classes, driver.Classify(err).String())
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if got := strings.Join(classes, " "); got != "ok corrupt corrupt corrupt status_4xx ok" {
		t.Errorf("classes %s", got)
	}
	for i, want := range []string{
		"copy f00000001.bin: byte 20000 differs from what was written",
		"copy f00000002.bin: 20000 bytes, 20488 were written (a short file)",
		"copy f00000003.bin: more than the 20488 bytes written",
		"copy f00000004.bin: not found (removed during the run?)",
	} {
		if i >= len(msgs) || msgs[i] != want {
			t.Errorf("message %d: %q, want %q", i, msgs, want)
		}
	}
	// stat checks sizes too.
	_, _, errs := do(t, s, acts[1], 6)
	if len(errs[driver.Corrupt]) != 2 || len(errs[driver.Status4xx]) != 1 {
		t.Errorf("stat errors %v", errs)
	}
	// read (the whole file here) checks every byte it reads.
	_, _, errs = do(t, s, acts[2], 6)
	if len(errs[driver.Corrupt]) != 2 || len(errs[driver.Status4xx]) != 1 ||
		errs[driver.Corrupt][0].Error() != "read f00000001.bin: byte 20000 differs from what was written" ||
		errs[driver.Corrupt][1].Error() != "read f00000002.bin: 20000 bytes at 0, 20488 expected (a short file)" {
		t.Errorf("read errors %v", errs)
	}
	// With verify: false only the length is checked.
	c2, acts2 := decode(t, "file://"+dir, "  population: {files: 6}\n  reuse: true\n  verify: false\n", "{op: copy-down}")
	c2.layout = newLayout(1, &c2.Population)
	var err error
	if c2.local, err = fsroot.Open(dir); err != nil {
		t.Fatal(err)
	}
	_, _, errs = do(t, open(t, c2, 0, 1), acts2[0], 2)
	if len(errs) != 0 {
		t.Errorf("verify: false: %v", errs)
	}
}

func TestReuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := "  population: {files: 20, tree: {depth: 1, width: 2}}\n  reuse: true\n"
	c, _ := decode(t, "file://"+dir, spec, "{op: copy-down}")
	written := func() int {
		t.Helper()
		if err := c.Prepare(context.Background(), population(1)); err != nil {
			t.Fatal(err)
		}
		return lastWritten(t, c)
	}
	if n := written(); n != 20 {
		t.Errorf("first Prepare wrote %d files", n)
	}
	if n := written(); n != 0 {
		t.Errorf("Prepare of a valid population wrote %d files", n)
	}
	os.Remove(filepath.Join(dir, "d01", "f00000003.bin"))
	os.Truncate(filepath.Join(dir, "d00", "f00000004.bin"), 10)
	os.WriteFile(filepath.Join(dir, "d00", "f00000006.bin"+tmpSuffix), nil, 0o644)
	if n := written(); n != 2 {
		t.Errorf("Prepare repaired %d files, want 2", n)
	}
	if p := c.LastPreparation(); p.Checked != 20 || p.Repaired != 2 || p.Bytes != 2*20488 ||
		strings.Join(p.RepairedNames, "|") != "d01/f00000003.bin: missing|d00/f00000004.bin: 10 bytes, 20488 expected" {
		t.Errorf("the repair reported: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(dir, "d00", "f00000006.bin"+tmpSuffix)); !os.IsNotExist(err) {
		t.Errorf("a renamed-away file was left: %v", err)
	}
	// A Prepare cut short leaves its marker incomplete: all is written again.
	b, _ := os.ReadFile(filepath.Join(dir, markerName))
	os.WriteFile(filepath.Join(dir, markerName), []byte(strings.Replace(string(b), `"complete": true`, `"complete": false`, 1)), 0o644)
	if n := written(); n != 20 {
		t.Errorf("Prepare after an incomplete one wrote %d files", n)
	}
	// Without reuse every file is written again.
	c.Reuse = false
	if n := written(); n != 20 {
		t.Errorf("fresh Prepare wrote %d files", n)
	}
	// Another population replaces this one: the old files go.
	c2, _ := decode(t, "file://"+dir, "  population: {files: 3}\n  reuse: true\n", "{op: copy-down}")
	if err := c2.Prepare(context.Background(), population(1)); err != nil {
		t.Fatal(err)
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	if got := strings.Join(names, " "); got != ".throng-population.json f00000000.bin f00000001.bin f00000002.bin" {
		t.Errorf("after the new population: %s", got)
	}
}

// lastWritten is the number of files the last Prepare wrote.
func lastWritten(t *testing.T, c *Config) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.prep.Items)
}

// Prepare never writes into a directory it did not fill.
func TestPrepareRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "thesis.doc"), []byte("precious"), 0o644)
	c, _ := decode(t, "file://"+dir, "  population: {files: 3}\n", "{op: copy-down}")
	err := c.Prepare(context.Background(), population(1))
	if err == nil || !strings.Contains(err.Error(), `the directory is not empty (it holds "thesis.doc") and holds no throng population`) {
		t.Errorf("Prepare: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "thesis.doc")); string(b) != "precious" {
		t.Error("the foreign file was touched")
	}
	os.WriteFile(filepath.Join(dir, markerName), []byte("{}"), 0o644)
	if err := c.Prepare(context.Background(), population(1)); err == nil || !strings.Contains(err.Error(), "is not a throng population marker") {
		t.Errorf("Prepare with a bad marker: %v", err)
	}
}

// A copy written to write_to is the file; a full client disk is an error of
// class other that says so, never a short copy.
func TestWriteTo(t *testing.T) {
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	c, acts := prepared(t, "file://"+dir, 1, "  population: {files: 4, tree: {depth: 1, width: 2}}\n  write_to: "+out+"\n", "{op: copy-down}")
	s := open(t, c, 0, 1)
	if _, _, errs := do(t, s, acts[0], 2); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, name := range []string{"d00/f00000000.bin", "d01/f00000001.bin"} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the copy differs (%v)", name, err)
		}
	}
	// Writes to /dev/full fail with ENOSPC, like a full disk. A link to it
	// would be refused (write_to is opened without following links): it is
	// mounted on the copy's place instead, which takes root.
	testenv.DevFull(t, filepath.Join(out, "d00", "f00000002.bin"))
	_, err := s.Do(context.Background(), acts[0])
	if driver.Classify(err) != driver.Other || !strings.Contains(err.Error(), "no space left on the client's disk") ||
		!strings.Contains(err.Error(), "f00000002.bin") {
		t.Errorf("disk full: %v (class %v)", err, driver.Classify(err))
	}
	if _, err := s.Do(context.Background(), acts[0]); err != nil {
		t.Errorf("the next copy: %v", err)
	}
}

func TestLocalOps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, acts := prepared(t, "file://"+dir, 2, "  population: {files: 8, tree: {depth: 1, width: 2}, per_user: true}\n",
		"{op: scan, bytes: 100}", "{op: read, bytes: 1000}", "{op: write, bytes: 3000}", "{op: rename}", "{op: open}",
		"{op: walk}", "{op: copy-up}", "{op: delete, from: uploads}", "{op: delete}", "{op: copy-down}")
	s := open(t, c, 1, 2)
	check := func(i, n int, wantIn, wantOut int64) {
		t.Helper()
		in, out, errs := do(t, s, acts[i], n)
		if len(errs) > 0 || in != wantIn || out != wantOut {
			t.Errorf("action %d: in %d out %d, want %d %d; %v", i, in, out, wantIn, wantOut, errs)
		}
	}
	check(0, 3, 300, 0)
	check(1, 3, 3000, 0)
	check(2, 5, 0, 15000)
	check(3, 4, 0, 0)
	check(4, 4, 0, 0)
	check(5, 3, 0, 0)
	check(9, 8, 8*20488, 0) // the writes and renames left the population valid
	check(6, 3, 0, 3*20488)
	ups, _ := os.ReadDir(filepath.Join(dir, uploadsDir, "u0001"))
	if len(ups) != 3 {
		t.Errorf("%d uploads", len(ups))
	}
	check(7, 3, 0, 0)
	if _, err := s.Do(context.Background(), acts[7]); driver.Classify(err) != driver.Skipped {
		t.Errorf("delete with no upload left: %v", err)
	}
	check(8, 2, 0, 0)
	if _, err := os.Stat(filepath.Join(dir, "u0001", "d00", "f00000000.bin")); !os.IsNotExist(err) {
		t.Errorf("delete: %v", err)
	}
	// The next Prepare restores the deleted files and empties the uploads.
	if err := c.Prepare(context.Background(), population(2)); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, c, 1, 2)
	if _, _, errs := do(t, s2, acts[9], 8); len(errs) > 0 {
		t.Errorf("after Prepare: %v", errs)
	}
	if ups, _ := os.ReadDir(filepath.Join(dir, uploadsDir, "u0001")); len(ups) != 0 {
		t.Errorf("%d uploads left after Prepare", len(ups))
	}
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	tgt, err := Embedded("127.0.0.1:0")
	if err != nil || !strings.HasPrefix(tgt.URL(), "file:///") {
		t.Fatal(tgt, err)
	}
	url, stop := tgt.URL(), tgt.Close
	dir := strings.TrimPrefix(url, "file://")
	c, acts := prepared(t, url, 1, "  population: {files: 3}\n", "{op: copy-down}")
	if err := c.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, errs := do(t, open(t, c, 0, 1), acts[0], 3); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there", dir)
	}
}
