//go:build linux

package regfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// specials makes, in a temporary directory, one file of each kind that is
// not a regular file: a directory, a FIFO, a socket, and (as root) a
// character device node equal to /dev/null's — never the real /dev.
func specials(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{"a directory": filepath.Join(dir, "dir")}
	os.Mkdir(out["a directory"], 0o755)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out["a FIFO (named pipe)"] = fifo
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out["a socket"] = sock
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		out["a character device"] = dev
	} else {
		t.Logf("mknod: %v: no device node tested", err)
	}
	return out
}

// Open and Read refuse what is not a regular file at once — a FIFO with no
// writer does not block the open — saying what it is; /dev/zero (which
// never ends) is a character device like any.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	cases := specials(t)
	cases["a character device "] = "/dev/zero" // reading it is harmless: refused before a byte
	for want, path := range cases {
		done := make(chan error, 1)
		go func() {
			_, err := Read(path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || err.Error() != strings.TrimSpace(want)+", not a regular file" {
				t.Errorf("%s: %v, want %q", path, err, strings.TrimSpace(want)+", not a regular file")
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the read hung", path)
		}
	}
}

// Read gives a regular file whole under its bound, and refuses it over.
func TestReadBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hello"), 0o644)
	if b, err := Read(p, 5); err != nil || string(b) != "hello" {
		t.Errorf("%q, %v", b, err)
	}
	var tl *TooLargeError
	if _, err := Read(p, 4); !errors.As(err, &tl) || err.Error() != "5 bytes: over the limit of 4" {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none"), 5); !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "none") {
		t.Errorf("missing: %v (want the cause without the path)", err)
	}
}

// CheckOutput lets a missing path, a regular file and a link to one be
// written, and refuses the others — a device node above all, which a
// rename would replace.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	os.WriteFile(file, []byte("{}"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(file, link)
	dangling := filepath.Join(dir, "dangling.json")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	for _, p := range []string{filepath.Join(dir, "new.json"), file, link, dangling} {
		if err := CheckOutput(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for want, p := range specials(t) {
		var nr *NotRegularError
		if err := CheckOutput(p); !errors.As(err, &nr) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
		// Through a symbolic link too.
		l := p + ".link"
		os.Symlink(p, l)
		if err := CheckOutput(l); !errors.As(err, &nr) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", l, err, want)
		}
	}
}
