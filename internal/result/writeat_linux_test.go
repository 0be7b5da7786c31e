package result

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// WriteAt never renames over what is not a regular file: a FIFO or a
// device node (made here, never the real /dev) is left as it was and the
// error says what it is.
func TestWriteAtRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{fifo: "a FIFO (named pipe), not a regular file"}
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		paths[dev] = "a character device, not a regular file"
	}
	run := &Run{Schema: Schema, Meta: demoMeta, Repetitions: []Repetition{{Intervals: []Interval{counterful(0)}}}}
	for p, want := range paths {
		before, _ := os.Lstat(p)
		err := WriteAt(p, run, MemorySource(run))
		if err == nil || !strings.Contains(err.Error(), p+": "+want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
		if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was replaced", p)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != len(paths) {
		t.Errorf("left behind: %v", ents)
	}
}
