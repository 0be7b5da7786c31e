// Package fsroot works on the files under one directory without ever
// leaving it: no symbolic link is followed below the directory, and a name
// cannot climb out of it. A link planted in place of a file or a
// directory, before a run or in the middle of one, is refused with
// ErrLink; it is never written through, read through or listed through.
//
// The directory itself is opened once, by the name it was given (links in
// that name are the user's own choice and are followed); every name below
// it is then resolved by the kernel relative to that descriptor:
//
//   - with openat2(2) and RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the
//     kernel has it (Linux 5.6 and later): one system call, the same cost
//     as open(2);
//   - otherwise one component at a time, each opened with O_NOFOLLOW
//     relative to its parent's descriptor.
//
// Each check is made by the kernel at the instant of the operation, so a
// link swapped in after an earlier check is refused too. Names are
// slash-separated and relative to the directory; "" is the directory
// itself. An absolute name, or one with an empty, "." or ".." component,
// is refused with ErrEscape before anything is asked of the kernel.
//
// Hard links are out of its reach: a hard link cannot cross file systems,
// and Linux's fs.protected_hardlinks (on by default) stops a user from
// linking a file they could not write themselves.
package fsroot

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrLink is the error (inside an *fs.PathError) for a name that is, or
// passes through, a symbolic link.
var ErrLink = errors.New("is or passes through a symbolic link, which is not followed under this directory")

// ErrEscape is the error (inside an *fs.PathError) for a name that would
// leave the directory: absolute, or with an empty, "." or ".." component.
var ErrEscape = errors.New("is not a plain name under this directory (absolute, or a '..', '.' or empty component)")

// Root is an open directory. Its methods are safe for concurrent use.
type Root struct {
	h    *handle
	name string // the directory as it was named, for messages
	walk bool   // no openat2: resolve one component at a time
}

// handle owns the directory's descriptor: closed by Close, or when the
// Root is garbage.
type handle struct {
	fd     int
	closed atomic.Bool
}

func (h *handle) close() error {
	if h.closed.Swap(true) {
		return nil
	}
	return unix.Close(h.fd)
}

// Open opens the directory dir.
func Open(dir string) (*Root, error) { return open(dir, false) }

// open is Open; walk forces the component-by-component resolution (for
// tests of the kernels without openat2).
func open(dir string, walk bool) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	r := &Root{h: &handle{fd: fd}, name: dir, walk: walk}
	runtime.AddCleanup(r, func(h *handle) { h.close() }, r.h)
	if !walk {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve}
		probe, err := unix.Openat2(fd, ".", &how)
		switch {
		case err == nil:
			unix.Close(probe)
		case err == unix.ENOSYS || err == unix.EPERM || err == unix.EINVAL:
			// An old kernel, or a seccomp filter that does not know it.
			r.walk = true
		default:
			r.Close()
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
	}
	return r, nil
}

// resolve is what openat2 is asked for: stay under the directory, follow
// no link (nor /proc's magic links).
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Name is the directory as it was named.
func (r *Root) Name() string { return r.name }

// Close closes the directory. No operation may be running or start after.
func (r *Root) Close() error { return r.h.close() }

// pathErr builds the error for name, with the errno mapped to ErrLink or
// ErrEscape where that is its meaning.
func (r *Root) pathErr(op, name string, err error) error {
	switch err {
	case unix.ELOOP:
		err = ErrLink
	case unix.EXDEV:
		err = ErrEscape
	}
	return &fs.PathError{Op: op, Path: path.Join(r.name, name), Err: err}
}

// check refuses a name that is not plain: absolute, or with an empty, "."
// or ".." component. "" (the directory itself) is plain.
func check(name string) error {
	if name == "" {
		return nil
	}
	for rest := name; ; {
		comp, tail, more := strings.Cut(rest, "/")
		if comp == "" || comp == "." || comp == ".." {
			return ErrEscape
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// OpenFile opens name with flags (O_RDONLY, O_WRONLY|O_CREAT|O_TRUNC,
// ...; O_CLOEXEC is added, and a link is never followed) and returns the raw descriptor,
// which the caller closes. A raw descriptor costs no poller registration:
// this is the per-file path of a load run.
func (r *Root) OpenFile(name string, flags int, perm uint32) (int, error) {
	fd, err := r.openat(name, flags, perm)
	if err != nil {
		return -1, r.pathErr("open", name, err)
	}
	return fd, nil
}

// openat opens name (checked here) and returns the bare errno on failure.
func (r *Root) openat(name string, flags int, perm uint32) (int, error) {
	if err := check(name); err != nil {
		return -1, err
	}
	flags |= unix.O_CLOEXEC
	if r.walk {
		return r.walkOpen(name, flags|unix.O_NOFOLLOW, perm)
	}
	// No O_NOFOLLOW here: RESOLVE_NO_SYMLINKS refuses a trailing link
	// with ELOOP, where O_NOFOLLOW would open it (O_PATH) or say ENOTDIR
	// (O_DIRECTORY).
	p := name
	if p == "" {
		p = "."
	}
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolve}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(perm)
	}
	for {
		fd, err := unix.Openat2(r.h.fd, p, &how)
		// EAGAIN: a rename raced with the resolution and the kernel
		// could not vouch for it; asking again is the documented answer.
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// walkOpen resolves name one component at a time, each directory opened
// with O_NOFOLLOW relative to its parent.
func (r *Root) walkOpen(name string, flags int, perm uint32) (int, error) {
	if name == "" {
		return retry(func() (int, error) { return unix.Openat(r.h.fd, ".", flags, perm) })
	}
	dir, owned := r.h.fd, false
	defer func() {
		if owned {
			unix.Close(dir)
		}
	}()
	rest := name
	for {
		comp, tail, more := strings.Cut(rest, "/")
		if !more {
			fd, err := retry(func() (int, error) { return unix.Openat(dir, comp, flags, perm) })
			if err == unix.ENOTDIR && flags&unix.O_DIRECTORY != 0 && isLink(dir, comp) {
				err = unix.ELOOP
			}
			if err == nil && flags&unix.O_PATH != 0 && isLinkFd(fd) {
				// O_PATH|O_NOFOLLOW opens the link itself.
				unix.Close(fd)
				return -1, unix.ELOOP
			}
			return fd, err
		}
		next, err := retry(func() (int, error) {
			return unix.Openat(dir, comp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err == unix.ENOTDIR && isLink(dir, comp) {
			err = unix.ELOOP
		}
		if err != nil {
			return -1, err
		}
		if owned {
			unix.Close(dir)
		}
		dir, owned, rest = next, true, tail
	}
}

func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// isLink reports whether name in dir is a symbolic link.
func isLink(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func isLinkFd(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// Info is what Stat and ReadDir tell of a file.
type Info struct {
	Name string // in ReadDir only
	Size int64
	Dir  bool
	Link bool // a symbolic link (ReadDir only: Stat refuses links)
}

// Stat returns name's size and kind.
func (r *Root) Stat(name string) (Info, error) {
	fd, err := r.openat(name, unix.O_PATH, 0)
	if err != nil {
		return Info{}, r.pathErr("stat", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Info{}, r.pathErr("stat", name, err)
	}
	in := info(&st)
	if in.Link {
		return Info{}, r.pathErr("stat", name, unix.ELOOP)
	}
	return in, nil
}

func info(st *unix.Stat_t) Info {
	m := st.Mode & unix.S_IFMT
	return Info{Size: st.Size, Dir: m == unix.S_IFDIR, Link: m == unix.S_IFLNK}
}

// ReadDir lists the directory name: every entry's name, size and kind
// (links are listed as links, never followed). An entry removed while the
// listing is made is left out.
func (r *Root) ReadDir(name string) ([]Info, error) {
	fd, err := r.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, r.pathErr("open", name, err)
	}
	f := os.NewFile(uintptr(fd), path.Join(r.name, name))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, r.pathErr("readdir", name, unwrap(err))
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return nil, r.pathErr("stat", path.Join(name, n), err)
		}
		in := info(&st)
		in.Name = n
		out = append(out, in)
	}
	return out, nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parent opens name's directory and returns its descriptor (to close with
// done) and name's last component.
func (r *Root) parent(name string) (dir int, base string, done func(), err error) {
	if err := check(name); err != nil || name == "" {
		return -1, "", nil, ErrEscape
	}
	d, base := path.Split(name)
	if d == "" {
		return r.h.fd, base, func() {}, nil
	}
	fd, err := r.openat(strings.TrimSuffix(d, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", nil, err
	}
	return fd, base, func() { unix.Close(fd) }, nil
}

// Remove removes the file or empty directory name (a link itself, never
// what it points to).
func (r *Root) Remove(name string) error {
	dir, base, done, err := r.parent(name)
	if err != nil {
		return r.pathErr("remove", name, err)
	}
	defer done()
	err = unix.Unlinkat(dir, base, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return r.pathErr("remove", name, err)
	}
	return nil
}

// Rename renames from to to, both under the directory. A link at either
// place is renamed or replaced itself, never followed.
func (r *Root) Rename(from, to string) error {
	fdir, fbase, fdone, err := r.parent(from)
	if err != nil {
		return r.pathErr("rename", from, err)
	}
	defer fdone()
	tdir, tbase, tdone := fdir, path.Base(to), func() {}
	if path.Dir(to) != path.Dir(from) || check(to) != nil {
		if tdir, tbase, tdone, err = r.parent(to); err != nil {
			return r.pathErr("rename", to, err)
		}
	}
	defer tdone()
	if err := unix.Renameat(fdir, fbase, tdir, tbase); err != nil {
		return r.pathErr("rename", from, err)
	}
	return nil
}

// MkdirAll creates the directory name and any missing parent under the
// directory; a link on the way is refused, not followed.
func (r *Root) MkdirAll(name string, perm uint32) error {
	if err := check(name); err != nil {
		return r.pathErr("mkdir", name, err)
	}
	if name == "" {
		return nil
	}
	dir, owned := r.h.fd, false
	defer func() {
		if owned {
			unix.Close(dir)
		}
	}()
	done := ""
	for rest := name; ; {
		comp, tail, more := strings.Cut(rest, "/")
		done = path.Join(done, comp)
		if err := unix.Mkdirat(dir, comp, perm); err != nil && err != unix.EEXIST {
			return r.pathErr("mkdir", done, err)
		}
		next, err := retry(func() (int, error) {
			return unix.Openat(dir, comp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err == unix.ENOTDIR && isLink(dir, comp) {
			err = unix.ELOOP
		}
		if err != nil {
			return r.pathErr("mkdir", done, err)
		}
		if owned {
			unix.Close(dir)
		}
		dir, owned = next, true
		if !more {
			return nil
		}
		rest = tail
	}
}

// RemoveAll removes name and everything under it (links are removed
// themselves, never followed). The directory itself ("") cannot be
// removed. A name that does not exist is not an error.
func (r *Root) RemoveAll(name string) error {
	if name == "" {
		return r.pathErr("remove", name, errors.New("refusing to remove the directory itself"))
	}
	dir, base, done, err := r.parent(name)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return r.pathErr("remove", name, err)
	}
	defer done()
	if err := removeAllAt(dir, base); err != nil {
		return r.pathErr("remove", name, err)
	}
	return nil
}

// removeAllAt removes name in dir, recursively, through descriptors only.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n); err != nil {
				break
			}
		}
	}
	f.Close()
	if err != nil {
		return unwrap(err)
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}
