package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/fsroot"
)

// Prepare implements driver.Config: before each repetition it makes the
// population exist exactly as the scenario describes it, for the users
// this process runs.
//
// A fresh population (reuse: false) is written again, every file. With
// reuse: true, a population whose marker file matches the scenario is kept:
// its directories are listed and any file missing or of the wrong size is
// written again (the content itself is checked by every read). A directory
// that is not empty and holds no population marker is never written into:
// throng does not overwrite files it did not create. The users' uploads
// (copy-up) are removed. Files are written over population.parallel
// connections.
func (c *Config) Prepare(ctx context.Context, pop driver.Population) error {
	return c.prepare(ctx, pop, false)
}

// KeepPopulation implements driver.PopulationKeeper: the population a
// Prepare wrote for as many users or more must still be there: its marker,
// complete and describing this scenario's population, and its directories
// (for the users of pop). Its files are listed, as with reuse: true, and
// one missing or of the wrong size (a delete action's) is written again;
// the uploads are reset. Nothing else is written.
func (c *Config) KeepPopulation(ctx context.Context, pop driver.Population) error {
	return c.prepare(ctx, pop, true)
}

// prepare is Prepare, or KeepPopulation when keep.
func (c *Config) prepare(ctx context.Context, pop driver.Population, keep bool) error {
	if err := c.targetError(); err != nil {
		return err
	}
	l := newLayout(pop.Seed, &c.Population)
	c.mu.Lock()
	c.layout = l
	c.mu.Unlock()
	p := &preparer{c: c, l: l, total: max(1, pop.TotalUsers), keep: keep}
	p.users = pop.Users
	if len(p.users) == 0 {
		for u := range p.total {
			p.users = append(p.users, u)
		}
	}
	p.whole = len(p.users) >= p.total
	p.mine = make(map[int]bool, len(p.users))
	for _, u := range p.users {
		p.mine[u] = true
	}
	if err := p.connect(ctx); err != nil {
		return err
	}
	if c.WriteTo != "" {
		out, err := openDir(c.WriteTo)
		if err != nil {
			return fmt.Errorf("files.write_to: %w", err)
		}
		p.out = out
		c.mu.Lock()
		c.out = out
		c.mu.Unlock()
	}
	defer p.close()
	start := time.Now()
	err := p.run(ctx)
	c.mu.Lock()
	c.prep = driver.Preparation{Users: len(p.users), Items: p.written, Bytes: p.bytes, Elapsed: time.Since(start),
		Method: p.method(), Checked: p.checked, Repaired: int64(len(p.repaired)), RepairedNames: p.repairedNames()}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("population at %s: %w", c.tgt.text, err)
	}
	return nil
}

type preparer struct {
	c       *Config
	l       *layout
	total   int   // users in the plan
	users   []int // users of this process
	whole   bool  // this process runs every user
	keep    bool  // KeepPopulation: check the population, never write it anew
	mine    map[int]bool
	fss     []fsys
	out     *fsroot.Root // write_to, or nil
	conns   []*smbConn
	written int64 // files written
	bytes   int64 // their bytes
	// A kept population (reuse): files checked by listing, and those
	// written again with why.
	checked  int64
	repaired []fileRef
}

// method says how the population was written.
func (p *preparer) method() string {
	if p.c.tgt.smb {
		return fmt.Sprintf("SMB create and write over %d connections", len(p.fss))
	}
	return fmt.Sprintf("local files, %d writers", len(p.fss))
}

// repairedNames names the first repaired files, with why.
func (p *preparer) repairedNames() []string {
	var out []string
	for _, r := range p.repaired[:min(len(p.repaired), driver.MaxRepairedNames)] {
		out = append(out, p.l.file(r.u, r.i)+": "+r.why)
	}
	return out
}

// LastPreparation implements driver.PreparationReporter: what the last
// Prepare wrote, and for a kept population what it checked and repaired.
func (c *Config) LastPreparation() driver.Preparation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prep
}

func (p *preparer) connect(ctx context.Context) error {
	n := p.c.Population.Parallel
	if !p.c.tgt.smb {
		r, err := p.c.openLocal()
		if err != nil {
			return err
		}
		for range n {
			p.fss = append(p.fss, localFS{r})
		}
		return nil
	}
	for range n {
		dctx, cancel := context.WithTimeout(ctx, p.c.Timeout.D())
		conn, err := p.c.dialSMB(dctx)
		cancel()
		if err != nil {
			return fmt.Errorf("target %s: %w", p.c.tgt.text, err)
		}
		p.conns = append(p.conns, conn)
		p.fss = append(p.fss, conn.fs(p.c.tgt.root))
	}
	p.c.mu.Lock()
	if p.c.observed.dialect == 0 {
		p.c.observed = p.conns[0].wire.observed()
	}
	p.c.mu.Unlock()
	return nil
}

func (p *preparer) close() {
	for _, c := range p.conns {
		c.close()
	}
}

func (p *preparer) run(ctx context.Context) error {
	fs := p.fss[0]
	if err := fs.mkdirAll(ctx, ""); err != nil {
		return classify(err, "create the directory")
	}
	old, err := p.readMarker(ctx)
	if err != nil {
		return err
	}
	want := p.l.marker()
	if p.keep {
		switch {
		case old == nil:
			return fmt.Errorf("the population prepared for the search is gone: no %s", markerName)
		case !old.Complete || !old.same(want):
			return fmt.Errorf("the population prepared for the search was changed: %s describes another population, or one not finished", markerName)
		}
	}
	reuse := (p.c.Reuse || p.keep) && old != nil && old.Complete && old.same(want)
	if old == nil {
		if err := p.checkEmpty(ctx); err != nil {
			return err
		}
	} else if !old.same(want) {
		if err := p.removeOld(ctx, old.layout()); err != nil {
			return err
		}
	}
	if !reuse {
		// Claim the directory before writing into it; the marker says the
		// population is complete only at the end, so a Prepare cut short
		// is written again next time (and not refused as foreign).
		if err := p.writeMarker(ctx, want); err != nil {
			return err
		}
	}
	if !p.keep {
		if err := p.makeDirs(ctx); err != nil {
			return err
		}
	}
	var todo []fileRef
	if reuse {
		if todo, err = p.check(ctx); err != nil {
			if p.keep {
				return fmt.Errorf("the population prepared for the search is not all there: %w", err)
			}
			return err
		}
		p.repaired = todo
	} else {
		p.each(func(u, i int) { todo = append(todo, fileRef{u: u, i: i}) })
	}
	if err := p.write(ctx, todo); err != nil {
		return err
	}
	if err := p.resetUploads(ctx); err != nil {
		return err
	}
	if !reuse {
		want.Complete = true
		return p.writeMarker(ctx, want)
	}
	return nil
}

func (p *preparer) writeMarker(ctx context.Context, m marker) error {
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := p.fss[0].create(ctx, markerName, append(b, '\n')); err != nil {
		return classify(err, "write the marker "+markerName)
	}
	return nil
}

// fileRef is file i of user u (-1: a shared population); why it is
// written again, for a kept population.
type fileRef struct {
	u, i int
	why  string
}

// each calls fn for every file of this process's users.
func (p *preparer) each(fn func(u, i int)) {
	if p.l.perUser {
		for _, u := range p.users {
			for i := range p.l.files {
				fn(u, i)
			}
		}
		return
	}
	for i := range p.l.files {
		if p.whole || p.mine[i%p.total] {
			fn(-1, i)
		}
	}
}

// readMarker reads the population's marker; nil when there is none.
func (p *preparer) readMarker(ctx context.Context) (*marker, error) {
	var b []byte
	buf := make([]byte, 64<<10)
	_, err := p.fss[0].read(ctx, markerName, 0, int64(len(buf)), buf, func(_ int64, q []byte) { b = append(b, q...) })
	if os.IsNotExist(err) || errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(err, "read "+markerName)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.Throng == 0 {
		return nil, fmt.Errorf("%s is not a throng population marker; remove it or give another directory", markerName)
	}
	return &m, nil
}

// checkEmpty refuses a directory that holds files throng did not write.
func (p *preparer) checkEmpty(ctx context.Context) error {
	ents, err := p.fss[0].list(ctx, "")
	if err != nil {
		return classify(err, "list the directory")
	}
	for _, e := range ents {
		if e.name != uploadsDir {
			return fmt.Errorf("the directory is not empty (it holds %q) and holds no throng population (%s): "+
				"throng writes only into an empty directory or its own population; give a new directory in the target", e.name, markerName)
		}
	}
	return nil
}

// removeOld deletes the files of an earlier, different population (for
// this process's users), so that listings see only the new one.
func (p *preparer) removeOld(ctx context.Context, old *layout) error {
	var refs []fileRef
	q := &preparer{l: old, users: p.users, whole: p.whole, mine: p.mine, total: p.total}
	q.each(func(u, i int) { refs = append(refs, fileRef{u: u, i: i}) })
	return p.parallel(ctx, refs, func(ctx context.Context, fs fsys, _ []byte, r fileRef) error {
		name := old.file(r.u, r.i)
		if err := fs.remove(ctx, name); err != nil && !os.IsNotExist(err) && !errors.Is(err, os.ErrNotExist) {
			return classify(err, "remove the old "+name)
		}
		return nil
	})
}

// makeDirs creates the population's directories (and write_to's).
func (p *preparer) makeDirs(ctx context.Context) error {
	owners := []int{-1}
	if p.l.perUser {
		owners = p.users
	}
	for _, u := range owners {
		for _, d := range p.l.leafDirs(u) {
			if d == "" {
				continue
			}
			if err := p.fss[0].mkdirAll(ctx, d); err != nil {
				return classify(err, "create directory "+d)
			}
			if p.out != nil {
				if err := p.out.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("files.write_to: %w", err)
				}
			}
		}
	}
	return nil
}

// check lists a reused population and returns the files to write again;
// it removes what rename actions may have left behind.
func (p *preparer) check(ctx context.Context) ([]fileRef, error) {
	sizes := map[string]int64{}
	owners := []int{-1}
	if p.l.perUser {
		owners = p.users
	}
	for _, u := range owners {
		for _, d := range p.l.leafDirs(u) {
			ents, err := p.fss[0].list(ctx, d)
			if err != nil {
				return nil, classify(err, "list "+dirName(d))
			}
			for _, e := range ents {
				name := path.Join(d, e.name)
				if strings.HasSuffix(e.name, tmpSuffix) {
					if err := p.fss[0].remove(ctx, name); err != nil {
						return nil, classify(err, "remove "+name)
					}
					continue
				}
				if !e.dir {
					sizes[name] = e.size
				}
			}
		}
	}
	var todo []fileRef
	p.each(func(u, i int) {
		p.checked++
		got, ok := sizes[p.l.file(u, i)]
		switch want := p.l.sizeOf(u, i); {
		case !ok:
			todo = append(todo, fileRef{u, i, "missing"})
		case got != want:
			todo = append(todo, fileRef{u, i, fmt.Sprintf("%d bytes, %d expected", got, want)})
		}
	})
	return todo, nil
}

// write writes the files, over every connection at once.
func (p *preparer) write(ctx context.Context, refs []fileRef) error {
	p.written, p.bytes = 0, 0
	var mu sync.Mutex
	err := p.parallel(ctx, refs, func(ctx context.Context, fs fsys, buf []byte, r fileRef) error {
		size := p.l.sizeOf(r.u, r.i)
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		data := buf[:size]
		fill(p.l.key(r.u, r.i), 0, data)
		name := p.l.file(r.u, r.i)
		if err := fs.create(ctx, name, data); err != nil {
			return classify(err, "write "+name)
		}
		mu.Lock()
		p.written++
		p.bytes += size
		mu.Unlock()
		return nil
	})
	return err
}

// parallel runs fn for every ref, one worker per connection; the first
// failure stops the others.
func (p *preparer) parallel(ctx context.Context, refs []fileRef, fn func(ctx context.Context, fs fsys, buf []byte, r fileRef) error) error {
	if len(refs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan fileRef)
	var wg sync.WaitGroup
	for _, fs := range p.fss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, min(p.l.maxSize(), 1<<20))
			for r := range next {
				tctx, tcancel := context.WithTimeout(ctx, p.c.Timeout.D())
				err := fn(tctx, fs, buf, r)
				tcancel()
				if err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
feed:
	for _, r := range refs {
		select {
		case next <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// resetUploads removes the users' uploads of earlier runs and creates
// their upload directories.
func (p *preparer) resetUploads(ctx context.Context) error {
	fs := p.fss[0]
	_, err := fs.stat(ctx, uploadsDir)
	if err != nil && !os.IsNotExist(err) && !errors.Is(err, os.ErrNotExist) {
		return classify(err, "stat "+uploadsDir)
	}
	if err == nil {
		if p.whole {
			if err := fs.removeAll(ctx, uploadsDir); err != nil {
				return classify(err, "remove "+uploadsDir)
			}
		} else {
			for _, u := range p.users {
				d := path.Dir(uploadName(u, 0))
				if err := fs.removeAll(ctx, d); err != nil && !os.IsNotExist(err) {
					return classify(err, "remove "+d)
				}
			}
		}
	}
	if !p.c.uploads {
		return nil
	}
	for _, u := range p.users {
		d := path.Dir(uploadName(u, 0))
		if err := fs.mkdirAll(ctx, d); err != nil {
			return classify(err, "create "+d)
		}
	}
	return nil
}

// openLocal opens the local target's directory (created when missing) for
// this Prepare and the run after it. The directory is the user's: links in
// its own path are followed as named; nothing under it is.
func (c *Config) openLocal() (*fsroot.Root, error) {
	r, err := openDir(c.tgt.root)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", c.tgt.text, err)
	}
	c.mu.Lock()
	c.local = r
	c.mu.Unlock()
	return r, nil
}

// openDir creates dir when missing and opens it as a root. The Root an
// earlier Prepare opened is left to the garbage collector, which closes
// it: a session of an earlier repetition can never hold a descriptor
// number reused for something else.
func openDir(dir string) (*fsroot.Root, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return fsroot.Open(dir)
}
