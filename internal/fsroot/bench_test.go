package fsroot

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The per-file cost of opening safely, against what the files driver did
// before (open(2) of the full path) and against Go's os.Root, for a
// population file two directories deep:
//
//	go test ./internal/fsroot -run '^$' -bench . -count 5
func BenchmarkOpenClose(b *testing.B) {
	dir := b.TempDir()
	const name = "d01/d02/f00000001.bin"
	full := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(full), 0o755)
	os.WriteFile(full, make([]byte, 20488), 0o644)
	b.Run("open(2) full path", func(b *testing.B) {
		for b.Loop() {
			fd, err := unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
	for _, walk := range []bool{false, true} {
		label := "fsroot openat2"
		if walk {
			label = "fsroot walk"
		}
		b.Run(label, func(b *testing.B) {
			r, err := open(dir, walk)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			for b.Loop() {
				fd, err := r.OpenFile(name, unix.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
			}
		})
	}
	b.Run("os.Root", func(b *testing.B) {
		r, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			f, err := r.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// stat: one stat(2) of the full path before; now an O_PATH open, fstat
// and close.
func BenchmarkStat(b *testing.B) {
	dir := b.TempDir()
	const name = "d01/d02/f00000001.bin"
	full := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(full), 0o755)
	os.WriteFile(full, make([]byte, 20488), 0o644)
	b.Run("stat(2) full path", func(b *testing.B) {
		var st unix.Stat_t
		for b.Loop() {
			if err := unix.Stat(full, &st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fsroot openat2", func(b *testing.B) {
		r, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			if _, err := r.Stat(name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.Root", func(b *testing.B) {
		r, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			if _, err := r.Stat(name); err != nil {
				b.Fatal(err)
			}
		}
	})
}
