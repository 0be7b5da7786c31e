// Package regfile opens and reads the files a user names — scenario files,
// ${file:...} secrets, data feeds, mail list files, certificates, results
// and journals — refusing anything that is not a regular file before a
// byte is read: a directory, a FIFO (whose open would wait for a writer
// forever), a device (/dev/zero never ends), a socket. Every such path goes
// through Open or Read, so the rule is in one place.
//
// The file is opened without blocking and checked on the descriptor
// itself, so a FIFO swapped in after a check cannot make the open or the
// read hang. Errors do not repeat the path: callers name the file in
// their own words.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error for a path that is not a regular file.
type NotRegularError struct{ Mode fs.FileMode }

func (e *NotRegularError) Error() string { return Kind(e.Mode) + ", not a regular file" }

// TooLargeError is the error for a file over the limit a reader was given:
// it is refused, not truncated.
type TooLargeError struct {
	Size int64 // the file's size; 0 when it only showed while reading
	Max  int64
}

func (e *TooLargeError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("over the limit of %d bytes", e.Max)
	}
	return fmt.Sprintf("%d bytes: over the limit of %d", e.Size, e.Max)
}

// Open opens the regular file at path for reading and returns it with its
// information. What is not a regular file gives a *NotRegularError; other
// failures the system's error without the path.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, nil, &NotRegularError{Mode: fi.Mode()}
		}
		return nil, nil, unwrapPath(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, unwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Mode: fi.Mode()}
	}
	return f, fi, nil
}

// Read reads the regular file at path, at most max bytes; a longer file
// gives a *TooLargeError (its size can change while it is read, or lie:
// files under /proc say 0, so at most one byte past max is read to know).
func Read(path string, max int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, &TooLargeError{Size: fi.Size(), Max: max}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Max: max}
	}
	return b, nil
}

// Kind names a file type that is not a regular file: "a directory", "a
// FIFO (named pipe)", "a character device", "a block device", "a socket",
// "a symbolic link" (from Lstat), else "a special file".
func Kind(m fs.FileMode) string {
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
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// CheckOutput says whether path may be written as an output file by
// creating a new file beside it and renaming it over path (as results
// are), or by truncating it (as journals are): it must not exist, or be a
// regular file, or a symbolic link to one (the link is then replaced). A
// device, a FIFO, a socket or a directory is refused with a
// *NotRegularError: a rename would replace a device node (as root,
// `--out /dev/null` once replaced /dev/null with a regular file), a FIFO
// would block, and a directory cannot take a file.
func CheckOutput(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return unwrapPath(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil // a dangling link: replaced
		} else if err != nil {
			return unwrapPath(err)
		}
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Mode: fi.Mode()}
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
