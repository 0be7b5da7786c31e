package files

import (
	"os"
	"path/filepath"

	"github.com/throng-io/throng/internal/driver"
)

// Embedded is the family's zero-setup target ("target: embedded"): a fresh
// temporary local directory, served through the file:// path (no server
// process: throng reads and writes it through the kernel). Closing the
// target removes the directory. listen is ignored: there is nothing to
// listen on.
//
// It measures the client machine's file system and page cache, not a file
// server; for SMB give a target like smb://user@127.0.0.1:445/share/dir.
func Embedded(listen string) (driver.Target, error) {
	dir, err := os.MkdirTemp("", "throng-files-")
	if err != nil {
		return nil, err
	}
	return localDir(dir), nil
}

// localDir is the embedded target: a temporary directory.
type localDir string

// URL implements driver.Target.
func (d localDir) URL() string { return "file://" + filepath.ToSlash(string(d)) }

// Close implements driver.Target: the directory is removed.
func (d localDir) Close() error { return os.RemoveAll(string(d)) }
