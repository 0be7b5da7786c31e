//go:build unix

package web

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps a file read-only: its pages are shared by every user and
// read from the page cache as they are touched, never copied.
func mapFile(path string, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
