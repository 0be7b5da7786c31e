//go:build linux

package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An output path that is not a regular file — a FIFO, a directory, a
// socket, a character device node (made here, never the real /dev), or a
// symbolic link to one — is refused before the run, with exit 2 and one
// message naming the flag and what the path is, and is left as it was:
// a result is renamed over its path, and `--out /dev/null` once replaced
// /dev/null with a regular file.
func TestOutputsNotRegular(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{}
	paths["a directory"] = filepath.Join(dir, "dir")
	os.Mkdir(paths["a directory"], 0o755)
	paths["a FIFO (named pipe)"] = filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(paths["a FIFO (named pipe)"], 0o644); err != nil {
		t.Fatal(err)
	}
	paths["a socket"] = filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", paths["a socket"])
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		paths["a character device"] = dev
	} else {
		t.Logf("mknod: %v: no device node tested", err)
	}
	for kind, p := range paths {
		link := p + ".link"
		os.Symlink(p, link)
		for _, c := range []struct{ name, flag, path string }{
			{"out", "--out", p},
			{"out-link", "--out", link},
			{"junit", "--junit", p},
		} {
			t.Run(c.name+"/"+filepath.Base(p), func(t *testing.T) {
				before, _ := os.Lstat(c.path)
				args := []string{"web-static", "--iterations", "5", "--users", "1"}
				if c.flag == "--out" {
					args = append(args, "--out", c.path)
				} else {
					args = append(args, "--out", filepath.Join(t.TempDir(), "r.json"), c.flag, c.path)
				}
				code, stderr, took, alloc := runClass(t, args...)
				checkClass(t, code, stderr, took, alloc, ExitBadInput, c.flag+" "+c.path, kind+", not a regular file: a result cannot be written there")
				after, err := os.Lstat(c.path)
				if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
					t.Errorf("%s was changed: %v %v", c.path, after, err)
				}
			})
		}
	}
	// The journal's place (beside the result) is checked too.
	t.Run("journal", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.json")
		os.Mkdir(strings.TrimSuffix(out, ".json")+".journal.jsonl", 0o755)
		code, stderr, took, alloc := runClass(t, "web-static", "--iterations", "5", "--out", out)
		checkClass(t, code, stderr, took, alloc, ExitBadInput, "its journal", "a directory, not a regular file")
		if _, err := os.Stat(out); err == nil {
			t.Errorf("a result was written")
		}
	})
	// With several scenarios --out is a directory: a file is refused.
	t.Run("many", func(t *testing.T) {
		code, stderr, took, alloc := runClass(t, "web-static", "web-static", "--iterations", "5", "--out", paths["a FIFO (named pipe)"])
		checkClass(t, code, stderr, took, alloc, ExitBadInput, paths["a FIFO (named pipe)"], "--out is a directory; this is a FIFO (named pipe)")
	})
}

// A --prometheus address that cannot be served — not an address, a port
// out of range, a port already taken — is refused before the run is
// prepared, with exit 2 and one message; no result is written.
func TestPrometheusAddressRefusedBeforeTheRun(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for addr, want := range map[string]string{
		"127.0.0.1:99999":    "invalid port",
		"127.0.0.1":          "missing port in address",
		busy.Addr().String(): "address already in use",
		"127.0.0.1:9464:9":   "too many colons",
	} {
		t.Run(addr, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			code, stderr, took, alloc := runClass(t, "web-static", "--iterations", "5", "--out", out, "--prometheus", addr)
			checkClass(t, code, stderr, took, alloc, ExitBadInput, "--prometheus "+addr, want)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the run went on: a result was written")
			}
		})
	}
}

// -o - (the result on stdout, a file of the default name beside) is no
// path: even where a directory is named "-", it is not refused.
func TestCheckOutputsStdout(t *testing.T) {
	t.Chdir(t.TempDir())
	os.Mkdir("-", 0o755)
	for _, many := range []bool{false, true} {
		if err := checkOutputs(&runFlags{out: StdoutOut}, many); err != nil {
			t.Errorf("many %v: %v", many, err)
		}
	}
	if err := checkOutputs(&runFlags{out: "./-"}, false); err == nil {
		t.Errorf("./- (a directory) was not refused")
	}
}

// report --html onto a FIFO (the write would block) or a directory is bad
// input, said at once.
func TestReportHTMLNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{fifo: "a FIFO (named pipe), not a regular file", dir: "a directory, not a regular file"} {
		code, _, stderr := throng(t, "report", "--html", p, "no-such-result.json")
		if code != ExitBadInput || !strings.Contains(stderr, "--html "+p+": "+want) {
			t.Errorf("%s: exit %d, %s", p, code, stderr)
		}
	}
}
