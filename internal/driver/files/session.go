package files

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/fsroot"
)

// session is one simulated user: its connection (a slot), its place in the
// population, and its buffers. It implements driver.Session; one goroutine
// uses it at a time.
type session struct {
	c       *Config
	l       *layout
	u       int // the user's global ID
	users   int // users in the whole plan
	rng     *rand.Rand
	cursors []int // per action: the next position of its sweep
	uploads int   // files this user's copy-up wrote in this repetition
	deleted int   // of those, deleted by delete from: uploads
	buf     []byte
	wbuf    []byte
	slot    *slot   // SMB; nil for a local target
	local   localFS // a local target
	outDir  *fsroot.Root
	out     int // the local copy being written (write_to), or -1
	// Uploads read back (verify.go): where events go (nil: not read
	// back), when the running action began, and what it wrote.
	sink    driver.Sink
	started time.Time
	check   readBack
	pending bool
}

var _ driver.Session = (*session)(nil)

// uploadsDir is where copy-up writes, relative to the root.
const uploadsDir = ".throng-uploads"

// markerName is the population's marker file, in the root.
const markerName = ".throng-population.json"

// tmpSuffix marks a file renamed away by a rename action (for a moment).
const tmpSuffix = ".throng-tmp"

// readBufMax bounds a session's read buffer; larger files are read in
// pieces of this size.
const readBufMax = 8 << 20

// Open implements driver.Config. The connection is made by the first
// action, so opening a user costs nothing and cannot fail, except when the
// target cannot be served or Prepare never ran.
func (c *Config) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	if err := c.targetError(); err != nil {
		return nil, driver.Errorf(driver.Other, err)
	}
	c.mu.Lock()
	l, local, outDir, sink := c.layout, c.local, c.out, c.sink
	c.mu.Unlock()
	if !c.VerifyUploads {
		sink = nil
	}
	if l == nil || (!c.tgt.smb && local == nil) || (c.WriteTo != "" && outDir == nil) {
		return nil, driver.Errorf(driver.Other, errors.New("files: the population was not prepared"))
	}
	s := &session{
		c: c, l: l, u: u.ID, users: max(1, u.Users),
		rng:     rand.New(rand.NewPCG(u.Seed, u.Seed^0x9E3779B97F4A7C15)),
		cursors: make([]int, c.compiled),
		buf:     make([]byte, min(l.maxSize()+1, readBufMax)),
		local:   localFS{local},
		outDir:  outDir,
		out:     -1,
		sink:    sink,
	}
	if c.tgt.smb {
		s.slot = c.acquire(u.ID)
	}
	return s, nil
}

// Close implements driver.Session.
func (s *session) Close() error {
	if s.slot != nil {
		s.c.release(s.slot)
		s.slot = nil
	}
	return nil
}

// Do implements driver.Session: one whole file operation, bounded by the
// timeout. A connection that broke (or timed out) is dropped; the next
// action connects again.
//
// What a copy-up or a write wrote is then read back and checked, outside
// the action's time (verify.go).
func (s *session) Do(parent context.Context, a driver.Action) (driver.Outcome, error) {
	act := a.(*action)
	s.started, s.pending = time.Now(), false
	ctx, cancel := context.WithTimeout(parent, s.c.Timeout.D())
	defer cancel()
	var fs fsys = s.local
	var conn *smbConn
	if s.slot != nil {
		var err error
		if conn, err = s.slot.get(ctx, s.c); err != nil {
			// The file this action was for counts as failed: the next
			// action takes the next file, as a copy that goes on would.
			s.consume(act)
			return driver.Outcome{}, err
		}
		fs = conn.fs(s.c.tgt.root)
	}
	if s.c.testFS != nil {
		fs = s.c.testFS(fs)
	}
	out, err := s.do(ctx, fs, act)
	if err != nil && conn != nil && brokenConn(err) {
		s.slot.drop(conn)
	}
	if err == nil && s.pending {
		out.Untimed = s.verify(parent, fs, conn)
	}
	return out, err
}

func (s *session) do(ctx context.Context, fs fsys, a *action) (driver.Outcome, error) {
	switch a.op {
	case OpCopyDown:
		return s.copyDown(ctx, fs, a, s.pick(a), true)
	case OpScan:
		return s.copyDown(ctx, fs, a, s.pick(a), false)
	case OpRead:
		return s.readSome(ctx, fs, a, s.pick(a))
	case OpCopyUp:
		return s.copyUp(ctx, fs)
	case OpWrite:
		return s.write(ctx, fs, a, s.pick(a))
	case OpWalk:
		return s.walk(ctx, fs, a)
	case OpStat:
		i := s.pick(a)
		name := s.l.file(s.u, i)
		size, err := fs.stat(ctx, name)
		if err != nil {
			return driver.Outcome{}, classify(err, "stat "+name)
		}
		if want := s.l.sizeOf(s.u, i); s.c.Verify && size != want {
			return driver.Outcome{}, driver.Errorf(driver.Corrupt, fmt.Errorf("stat %s: %d bytes, %d were written", name, size, want))
		}
		return driver.Outcome{}, nil
	case OpOpen:
		name := s.l.file(s.u, s.pick(a))
		return driver.Outcome{}, classify(fs.openClose(ctx, name), "open "+name)
	case OpRename:
		name := s.l.file(s.u, s.pick(a))
		from, to := name, name+tmpSuffix
		if err := fs.rename(ctx, from, to); err != nil {
			return driver.Outcome{}, classify(err, "rename "+name)
		}
		return driver.Outcome{}, classify(fs.rename(ctx, to, from), "rename back "+name)
	case OpDelete:
		if a.uploads {
			return s.deleteUpload(ctx, fs)
		}
		name := s.l.file(s.u, s.pick(a))
		return driver.Outcome{}, classify(fs.remove(ctx, name), "delete "+name)
	}
	return driver.Outcome{}, driver.Errorf(driver.Other, fmt.Errorf("op %s", a.op))
}

// consume moves past the file action a would have worked on.
func (s *session) consume(a *action) {
	switch {
	case a.op == OpCopyUp:
		s.uploads++
	case a.op == OpDelete && a.uploads, a.random:
	default:
		s.cursors[a.index]++
	}
}

// pick returns the population index of the file action a works on.
func (s *session) pick(a *action) int {
	if a.random {
		n := s.l.slice(s.u, s.users)
		if n == 0 {
			return s.u % s.l.files
		}
		return s.l.index(s.u, s.users, s.rng.IntN(n))
	}
	j := s.cursors[a.index]
	s.cursors[a.index]++
	return s.l.index(s.u, s.users, j)
}

// copyDown reads file i whole (or, for a scan with bytes, its beginning),
// checks every byte and, for a copy, writes the copy to write_to.
func (s *session) copyDown(ctx context.Context, fs fsys, a *action, i int, copyOut bool) (driver.Outcome, error) {
	name := s.l.file(s.u, i)
	size := s.l.sizeOf(s.u, i)
	want, max := size, size+1 // one byte more: a longer file shows
	if a.bytes > 0 && a.bytes < size {
		want, max = a.bytes, a.bytes
	}
	local := copyOut && s.c.WriteTo != ""
	var werr error
	key := s.l.key(s.u, i)
	var bad int64 = -1
	n, err := fs.read(ctx, name, 0, max, s.buf, func(off int64, p []byte) {
		if s.c.Verify && bad < 0 && off < size {
			q := p[:min(int64(len(p)), size-off)]
			if k := mismatch(key, off, q); k >= 0 {
				bad = off + int64(k)
			}
		}
		if local && werr == nil {
			werr = s.writeLocal(name, off, p)
		}
	})
	out := driver.Outcome{BytesIn: n}
	if s.out >= 0 {
		if cerr := syscall.Close(s.out); werr == nil {
			werr = cerr
		}
		s.out = -1
	}
	switch {
	case err != nil:
		return out, classify(err, "copy "+name)
	case n < want:
		return out, driver.Errorf(driver.Corrupt, fmt.Errorf("copy %s: %d bytes, %d were written (a short file)", name, n, want))
	case n > want:
		return out, driver.Errorf(driver.Corrupt, fmt.Errorf("copy %s: more than the %d bytes written", name, want))
	case bad >= 0:
		return out, driver.Errorf(driver.Corrupt, fmt.Errorf("copy %s: byte %d differs from what was written", name, bad))
	case werr != nil:
		return out, localError(werr, filepath.Join(s.c.WriteTo, filepath.FromSlash(name)))
	}
	return out, nil
}

// writeLocal writes a piece of a copy to write_to (with system calls of
// its own: an os.File costs a poller registration per file), never
// through a link under it.
func (s *session) writeLocal(name string, off int64, p []byte) error {
	if off == 0 {
		fd, err := s.outDir.OpenFile(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		s.out = fd
	}
	if s.out < 0 {
		return errors.New("the copy was not opened")
	}
	for len(p) > 0 {
		n, err := syscall.Write(s.out, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("short write (%d bytes left)", len(p))
		}
		p = p[n:]
	}
	return nil
}

// localError classes a failure to write the local copy: the client's side,
// class other, with the cause in words.
func localError(err error, where string) error {
	msg := err.Error()
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		msg = "no space left on the client's disk"
	}
	return driver.Errorf(driver.Other, fmt.Errorf("local copy %s: %s (the server's file was read and checked)", where, msg))
}

// readSome reads a.bytes of file i at a random offset (all of it when
// bytes is not given) and checks them.
func (s *session) readSome(ctx context.Context, fs fsys, a *action, i int) (driver.Outcome, error) {
	name := s.l.file(s.u, i)
	size := s.l.sizeOf(s.u, i)
	want, off := size, int64(0)
	if a.bytes > 0 && a.bytes < size {
		want = a.bytes
		off = s.rng.Int64N(size - want + 1)
	}
	end := off + want
	if !s.c.Verify {
		end = 0
	}
	n, bad, err := s.readChecked(ctx, fs, name, s.l.key(s.u, i), off, want, end)
	out := driver.Outcome{BytesIn: n}
	switch {
	case err != nil:
		return out, classify(err, "read "+name)
	case n != want:
		return out, driver.Errorf(driver.Corrupt, fmt.Errorf("read %s: %d bytes at %d, %d expected (a short file)", name, n, off, want))
	case bad >= 0:
		return out, driver.Errorf(driver.Corrupt, fmt.Errorf("read %s: byte %d differs from what was written", name, bad))
	}
	return out, nil
}

// write writes a.bytes of file i's own content at a random offset.
func (s *session) write(ctx context.Context, fs fsys, a *action, i int) (driver.Outcome, error) {
	name := s.l.file(s.u, i)
	size := s.l.sizeOf(s.u, i)
	n := min(a.bytes, size)
	off := s.rng.Int64N(size - n + 1)
	p := s.wbuffer(n)
	key := s.l.key(s.u, i)
	fill(key, off, p)
	if err := fs.writeAt(ctx, name, off, p); err != nil {
		return driver.Outcome{}, classify(err, "write "+name)
	}
	s.toCheck(name, key, off, n, false)
	return driver.Outcome{BytesOut: n}, nil
}

func (s *session) wbuffer(n int64) []byte {
	if int64(cap(s.wbuf)) < n {
		s.wbuf = make([]byte, n)
	}
	return s.wbuf[:n]
}

// uploadName is the name of upload n of user u, relative to the root.
func uploadName(u, n int) string {
	return fmt.Sprintf("%s/u%04d/f%08d.bin", uploadsDir, u, n)
}

// copyUp writes the user's next upload.
func (s *session) copyUp(ctx context.Context, fs fsys) (driver.Outcome, error) {
	n := s.uploads
	name := uploadName(s.u, n)
	size := s.l.sizeOf(s.u, n%s.l.files)
	p := s.wbuffer(size)
	key := contentKey(s.l.seed, uploadKind, s.u, n)
	fill(key, 0, p)
	s.uploads++ // a failed upload is not retried: the next one has a new name
	if err := fs.create(ctx, name, p); err != nil {
		return driver.Outcome{}, classify(err, "copy up "+name)
	}
	s.toCheck(name, key, 0, size, true)
	return driver.Outcome{BytesOut: size}, nil
}

func (s *session) deleteUpload(ctx context.Context, fs fsys) (driver.Outcome, error) {
	if s.deleted >= s.uploads {
		return driver.Outcome{}, driver.Errorf(driver.Skipped, errors.New("delete from uploads: this user has no upload left to delete"))
	}
	name := uploadName(s.u, s.deleted)
	s.deleted++
	return driver.Outcome{}, classify(fs.remove(ctx, name), "delete "+name)
}

// walk lists one directory of the population and, unless stat: false,
// asks for every entry's attributes.
func (s *session) walk(ctx context.Context, fs fsys, a *action) (driver.Outcome, error) {
	nd := s.l.numDirs()
	var j int
	switch {
	case a.random:
		j = s.rng.IntN(nd)
	case s.l.perUser:
		j = s.cursors[a.index] % nd
		s.cursors[a.index]++
	default:
		j = int((int64(s.u) + int64(s.cursors[a.index])*int64(s.users)) % int64(nd))
		s.cursors[a.index]++
	}
	dir := s.l.dir(s.u, j)
	ents, err := fs.list(ctx, dir)
	if err != nil {
		return driver.Outcome{}, classify(err, "list "+dirName(dir))
	}
	if a.stat {
		for _, e := range ents {
			if _, err := fs.stat(ctx, path.Join(dir, e.name)); err != nil {
				return driver.Outcome{}, classify(err, "stat "+path.Join(dir, e.name))
			}
		}
	}
	return driver.Outcome{}, nil
}

func dirName(d string) string {
	if d == "" {
		return "the top directory"
	}
	return d
}
