package fsroot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// scene is a root with links planted in it, and what they point to
// outside it.
type scene struct {
	root    string // the directory
	outside string // a directory beside it
	victim  string // a file outside, that nothing may change
}

// newScene builds:
//
//	root/d/real            a file of the root
//	root/lnk  -> victim    a link to a file outside
//	root/dl   -> outside/  a link to a directory outside
//	root/up   -> ..        a link that climbs
//	outside/victim, outside/keep
func newScene(t *testing.T) scene {
	t.Helper()
	top := t.TempDir()
	s := scene{root: filepath.Join(top, "root"), outside: filepath.Join(top, "outside")}
	s.victim = filepath.Join(s.outside, "victim")
	for _, d := range []string{s.root, filepath.Join(s.root, "d"), s.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(s.root, "d", "real"), []byte("mine"), 0o644))
	must(t, os.WriteFile(s.victim, []byte("precious"), 0o644))
	must(t, os.WriteFile(filepath.Join(s.outside, "keep"), []byte("keep"), 0o644))
	must(t, os.Symlink(s.victim, filepath.Join(s.root, "lnk")))
	must(t, os.Symlink(s.outside, filepath.Join(s.root, "dl")))
	must(t, os.Symlink("..", filepath.Join(s.root, "up")))
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// intact fails the test if anything outside the root changed.
func (s scene) intact(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(s.victim); err != nil || string(b) != "precious" {
		t.Errorf("the file outside was changed: %q %v", b, err)
	}
	ents, _ := os.ReadDir(s.outside)
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the directory outside holds %v, want [keep victim]", names)
	}
}

// modes runs a test with openat2 and with the component walk.
func modes(t *testing.T, f func(t *testing.T, open func(string) (*Root, error))) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, func(dir string) (*Root, error) {
				r, err := open(dir, walk)
				if err == nil && !walk && r.walk {
					t.Fatal("this kernel has no openat2: the openat2 path is not tested")
				}
				return r, err
			})
		})
	}
}

func isLinkErr(err error) bool   { return errors.Is(err, ErrLink) }
func isEscapeErr(err error) bool { return errors.Is(err, ErrEscape) }

// Every operation refuses a link on the way, and the refusal says so; a
// name that climbs is refused before the kernel is asked.
func TestLinksAreNotFollowed(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) (*Root, error)) {
		s := newScene(t)
		r, err := open(s.root)
		must(t, err)
		defer r.Close()
		writeFlags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
		for _, tt := range []struct {
			what string
			err  error
			want func(error) bool
		}{
			{"write through a file link", openErr(r.OpenFile("lnk", writeFlags, 0o644)), isLinkErr},
			{"read through a file link", openErr(r.OpenFile("lnk", unix.O_RDONLY, 0)), isLinkErr},
			{"create in a linked directory", openErr(r.OpenFile("dl/new", writeFlags, 0o644)), isLinkErr},
			{"read in a linked directory", openErr(r.OpenFile("dl/victim", unix.O_RDONLY, 0)), isLinkErr},
			{"a link that climbs", openErr(r.OpenFile("up/outside/victim", unix.O_RDONLY, 0)), isLinkErr},
			{"..", openErr(r.OpenFile("../outside/victim", unix.O_RDONLY, 0)), isEscapeErr},
			{".. inside", openErr(r.OpenFile("d/../../outside/victim", writeFlags, 0o644)), isEscapeErr},
			{"absolute", openErr(r.OpenFile(s.victim, writeFlags, 0o644)), isEscapeErr},
			{"empty component", openErr(r.OpenFile("d//real", unix.O_RDONLY, 0)), isEscapeErr},
			{"stat a file link", statErr(r.Stat("lnk")), isLinkErr},
			{"stat a directory link", statErr(r.Stat("dl")), isLinkErr},
			{"stat through a directory link", statErr(r.Stat("dl/victim")), isLinkErr},
			{"list a directory link", listErr(r.ReadDir("dl")), isLinkErr},
			{"list a link that climbs", listErr(r.ReadDir("up")), isLinkErr},
			{"remove through a directory link", r.Remove("dl/victim"), isLinkErr},
			{"remove ..", r.Remove("../outside/victim"), isEscapeErr},
			{"rename out through a link", r.Rename("d/real", "dl/real"), isLinkErr},
			{"rename in through a link", r.Rename("dl/victim", "d/v"), isLinkErr},
			{"mkdir through a link", r.MkdirAll("dl/sub/sub", 0o755), isLinkErr},
			{"mkdir ..", r.MkdirAll("../outside/sub", 0o755), isEscapeErr},
			{"remove all through a link", r.RemoveAll("dl/keep"), isLinkErr},
		} {
			if !tt.want(tt.err) {
				t.Errorf("%s: error %v", tt.what, tt.err)
			}
		}
		s.intact(t)
		// The message names the path and why.
		_, err = r.OpenFile("dl/victim", unix.O_RDONLY, 0)
		if msg := err.Error(); !strings.Contains(msg, filepath.Join(s.root, "dl/victim")) || !strings.Contains(msg, "symbolic link") {
			t.Errorf("message %q", msg)
		}
	})
}

func openErr(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}
func statErr(_ Info, err error) error   { return err }
func listErr(_ []Info, err error) error { return err }

// What is under the root works as it should, links included as entries:
// a link is listed, removed, renamed as itself.
func TestPlainOperations(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) (*Root, error)) {
		s := newScene(t)
		r, err := open(s.root)
		must(t, err)
		defer r.Close()
		fd, err := r.OpenFile("d/new", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
		must(t, err)
		unix.Write(fd, []byte("hello"))
		unix.Close(fd)
		if in, err := r.Stat("d/new"); err != nil || in.Size != 5 || in.Dir {
			t.Errorf("stat %+v %v", in, err)
		}
		if in, err := r.Stat(""); err != nil || !in.Dir {
			t.Errorf("stat of the root %+v %v", in, err)
		}
		ents, err := r.ReadDir("")
		must(t, err)
		kinds := map[string]string{}
		for _, e := range ents {
			kinds[e.Name] = map[bool]string{true: "link", false: map[bool]string{true: "dir", false: "file"}[e.Dir]}[e.Link]
		}
		if kinds["d"] != "dir" || kinds["lnk"] != "link" || kinds["dl"] != "link" || len(kinds) != 4 {
			t.Errorf("entries %v", kinds)
		}
		must(t, r.MkdirAll("a/b/c", 0o755))
		must(t, r.MkdirAll("a/b/c", 0o755)) // again: nothing to do
		must(t, r.Rename("d/new", "a/b/c/moved"))
		must(t, r.Rename("a/b/c/moved", "a/b/c/back"))
		if b, err := os.ReadFile(filepath.Join(s.root, "a/b/c/back")); err != nil || string(b) != "hello" {
			t.Errorf("after renames: %q %v", b, err)
		}
		// Links are removed themselves.
		must(t, r.Remove("lnk"))
		must(t, r.RemoveAll("dl"))
		// A tree with a link to the outside inside it: the link goes, the
		// outside stays.
		must(t, os.Symlink(s.outside, filepath.Join(s.root, "a/b/out")))
		must(t, r.RemoveAll("a"))
		if _, err := os.Lstat(filepath.Join(s.root, "a")); !os.IsNotExist(err) {
			t.Errorf("a is still there: %v", err)
		}
		must(t, r.RemoveAll("none"))
		must(t, r.Remove("d/real"))
		must(t, r.Remove("d"))
		if err := r.RemoveAll(""); err == nil {
			t.Error("the root itself was removed")
		}
		s.intact(t)
	})
}

// A link swapped in after the directory was opened (and after a first
// successful use) is refused at the next operation; the root itself
// renamed away and replaced by a link: the operations stay on the
// directory that was opened.
func TestLinkSwappedIn(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) (*Root, error)) {
		s := newScene(t)
		r, err := open(s.root)
		must(t, err)
		defer r.Close()
		fd, err := r.OpenFile("d/real", unix.O_WRONLY, 0)
		must(t, err)
		unix.Close(fd)
		// d becomes a link to the outside, holding a file of the same name.
		must(t, os.Rename(filepath.Join(s.root, "d"), filepath.Join(s.root, "d.old")))
		must(t, os.Symlink(s.outside, filepath.Join(s.root, "d")))
		must(t, os.Symlink(s.victim, filepath.Join(s.outside, "real")))
		if _, err := r.OpenFile("d/real", unix.O_WRONLY|unix.O_TRUNC, 0); !isLinkErr(err) {
			t.Errorf("open after the swap: %v", err)
		}
		os.Remove(filepath.Join(s.outside, "real"))
		// The root itself swapped for a link to the outside.
		moved := s.root + ".moved"
		must(t, os.Rename(s.root, moved))
		must(t, os.Symlink(s.outside, s.root))
		fd, err = r.OpenFile("written-after", unix.O_WRONLY|unix.O_CREAT, 0o644)
		must(t, err)
		unix.Close(fd)
		if _, err := os.Stat(filepath.Join(moved, "written-after")); err != nil {
			t.Errorf("the file did not land in the directory opened: %v", err)
		}
		s.intact(t)
	})
}

func TestOpenNeedsADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Open(f); err == nil {
		t.Error("a file was opened as a root")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v", err)
	}
}
