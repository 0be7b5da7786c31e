package files

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// fsys is what a session works on: a mounted SMB share (one connection) or
// a local directory. Names are full paths as the file system wants them
// (target.join). Every method is one whole client operation.
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

// localFS is a local or mounted directory, through the kernel.
type localFS struct{}

var _ fsys = localFS{}

func (localFS) read(_ context.Context, name string, off, max int64, buf []byte, fn func(int64, []byte)) (int64, error) {
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: name, Err: err}
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

func (localFS) create(_ context.Context, name string, p []byte) error {
	return writeLocal(name, p)
}

// writeLocal creates (or truncates) name and writes p, checking that every
// byte was written: a short write is an error, never a short file.
func writeLocal(name string, p []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := f.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (localFS) writeAt(_ context.Context, name string, off int64, p []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	n, err := f.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (localFS) openClose(_ context.Context, name string) error {
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	return syscall.Close(fd)
}

func (localFS) stat(_ context.Context, name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (localFS) list(_ context.Context, dir string) ([]entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(des))
	for _, de := range des {
		e := entry{name: de.Name(), dir: de.IsDir()}
		if !e.dir {
			fi, err := de.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue // removed since the listing
			}
			if err != nil {
				return nil, err
			}
			e.size = fi.Size()
		}
		out = append(out, e)
	}
	return out, nil
}

func (localFS) remove(_ context.Context, name string) error     { return os.Remove(name) }
func (localFS) rename(_ context.Context, from, to string) error { return os.Rename(from, to) }
func (localFS) mkdirAll(_ context.Context, dir string) error    { return os.MkdirAll(dir, 0o755) }
func (localFS) removeAll(_ context.Context, dir string) error {
	if !filepath.IsAbs(dir) {
		return errors.New("refusing to remove a relative path")
	}
	return os.RemoveAll(dir)
}
