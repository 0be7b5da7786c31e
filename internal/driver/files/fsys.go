package files

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/throng-io/throng/internal/fsroot"
)

// fsys is what a session works on: a mounted SMB share (one connection) or
// a local directory. Names are slash-separated and relative to the
// target's directory ("" is the directory itself). Every method is one
// whole client operation.
type fsys interface {
	// read opens name, reads from offset off up to max bytes (less when
	// the file ends first) in pieces of at most len(buf), handing each
	// piece to fn, and closes it. It returns the bytes read. A file that
	// fits buf is one open, one read and one close.
	read(ctx context.Context, name string, off, max int64, buf []byte, fn func(off int64, p []byte)) (int64, error)
	// create creates name (or truncates it) and writes p into it.
	create(ctx context.Context, name string, p []byte) error
	// writeAt opens the existing file name and writes p at offset off.
	writeAt(ctx context.Context, name string, off int64, p []byte) error
	// openClose opens name for reading and closes it.
	openClose(ctx context.Context, name string) error
	// stat returns name's size.
	stat(ctx context.Context, name string) (int64, error)
	// list lists the directory dir: its entries' names, sizes and kinds.
	list(ctx context.Context, dir string) ([]entry, error)
	remove(ctx context.Context, name string) error
	rename(ctx context.Context, from, to string) error
	mkdirAll(ctx context.Context, dir string) error
	removeAll(ctx context.Context, dir string) error
}

type entry struct {
	name string
	size int64
	dir  bool
}

// localFS is a local or mounted directory, through the kernel. Every name
// is opened under the directory without following a symbolic link
// (package fsroot): a link planted in the population, before or during a
// run, is refused and never written or read through.
type localFS struct{ r *fsroot.Root }

var _ fsys = localFS{}

func (f localFS) read(_ context.Context, name string, off, max int64, buf []byte, fn func(int64, []byte)) (int64, error) {
	fd, err := f.r.OpenFile(name, syscall.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	var total int64
	for total < max {
		p := buf[:min(int64(len(buf)), max-total)]
		n := 0
		for n < len(p) {
			m, err := syscall.Pread(fd, p[n:], off+total+int64(n))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				syscall.Close(fd)
				return total + int64(n), &os.PathError{Op: "read", Path: name, Err: err}
			}
			if m == 0 {
				break
			}
			n += m
		}
		if n > 0 {
			fn(off+total, p[:n])
		}
		total += int64(n)
		if n < len(p) {
			break // the end of the file
		}
	}
	if err := syscall.Close(fd); err != nil {
		return total, &os.PathError{Op: "close", Path: name, Err: err}
	}
	return total, nil
}

// create creates (or truncates) name and writes p, checking that every
// byte was written: a short write is an error, never a short file.
func (f localFS) create(_ context.Context, name string, p []byte) error {
	fd, err := f.r.OpenFile(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return writeClose(fd, name, 0, p)
}

func (f localFS) writeAt(_ context.Context, name string, off int64, p []byte) error {
	fd, err := f.r.OpenFile(name, syscall.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return writeClose(fd, name, off, p)
}

// writeClose writes all of p at off and closes fd.
func writeClose(fd int, name string, off int64, p []byte) error {
	var err error
	for len(p) > 0 {
		var n int
		n, err = syscall.Pwrite(fd, p, off)
		if err == syscall.EINTR {
			err = nil
			continue
		}
		if err != nil {
			err = &os.PathError{Op: "write", Path: name, Err: err}
			break
		}
		if n == 0 {
			err = io.ErrShortWrite
			break
		}
		p, off = p[n:], off+int64(n)
	}
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		err = &os.PathError{Op: "close", Path: name, Err: cerr}
	}
	return err
}

func (f localFS) openClose(_ context.Context, name string) error {
	fd, err := f.r.OpenFile(name, syscall.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

func (f localFS) stat(_ context.Context, name string) (int64, error) {
	in, err := f.r.Stat(name)
	return in.Size, err
}

func (f localFS) list(_ context.Context, dir string) ([]entry, error) {
	ents, err := f.r.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(ents))
	for _, e := range ents {
		out = append(out, entry{name: e.Name, size: e.Size, dir: e.Dir})
	}
	return out, nil
}

func (f localFS) remove(_ context.Context, name string) error     { return f.r.Remove(name) }
func (f localFS) rename(_ context.Context, from, to string) error { return f.r.Rename(from, to) }
func (f localFS) mkdirAll(_ context.Context, dir string) error    { return f.r.MkdirAll(dir, 0o755) }
func (f localFS) removeAll(_ context.Context, dir string) error {
	if dir == "" {
		return errors.New("refusing to remove the target's directory itself")
	}
	return f.r.RemoveAll(dir)
}
