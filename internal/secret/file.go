package secret

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadFile reads the regular file at path, at most max bytes. Anything
// else is refused with a message saying what it is: a directory, a FIFO
// (whose open would wait for a writer), a device (/dev/zero would never
// end), a socket. The file is opened without blocking and checked on the
// descriptor itself, so a FIFO swapped in after a check cannot make the
// read hang. A file over max bytes is refused, not truncated: the error
// gives the limit. The message does not repeat path; callers name it.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s, not a regular file", kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%d bytes: over the limit of %d", fi.Size(), max)
	}
	// The size can change (or lie: files under /proc say 0): read at most
	// one byte past the limit to know.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("over the limit of %d bytes", max)
	}
	return b, nil
}

// kind names a file type that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
