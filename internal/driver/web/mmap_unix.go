//go:build unix

package web

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps an open regular file (regfile.Open) read-only: its pages are
// shared by every user and read from the page cache as they are touched,
// never copied. The mapping outlives the file's descriptor.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, nil, nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
