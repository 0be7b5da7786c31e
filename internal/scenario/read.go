package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileSize bounds the scenario files read. A scenario is a few
// kilobytes; the bound keeps the YAML parser, whose memory grows by about
// a kilobyte per token, well under 100 MB whatever the file holds, and
// turns a wrong path (a log, a binary) into a message rather than a long
// parse.
const MaxFileSize = 256 << 10

// ReadFile reads a scenario file. It refuses what is not a regular file
// (a directory, a FIFO, a device such as /dev/zero, a socket) before
// reading a byte, never blocks on opening one, and reads at most
// MaxFileSize bytes: a file that grows while it is read is refused too.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, unwrapPathError(err))
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	// Non-blocking: a path swapped for a FIFO between the Stat and the
	// open must not hang the open; the file is checked again once open.
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, unwrapPathError(err))
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, unwrapPathError(err))
	}
	if len(src) > MaxFileSize {
		return nil, tooLarge(path, int64(len(src)))
	}
	return src, nil
}

// regular refuses what is not a regular file of at most MaxFileSize bytes.
func regular(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	var what string
	switch {
	case m.IsRegular():
		if fi.Size() > MaxFileSize {
			return tooLarge(path, fi.Size())
		}
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("scenario %s: is %s, not a scenario file (a regular file is needed)", path, what)
}

func tooLarge(path string, n int64) error {
	return fmt.Errorf("scenario %s: %d bytes is too large for a scenario file (at most %d KiB)", path, n, MaxFileSize>>10)
}

// unwrapPathError drops the *PathError's repetition of the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
