package files

import (
	"os"
	"path/filepath"
)

// ServeEmbedded is the family's zero-setup target ("target: embedded"): a
// fresh temporary local directory, served through the file:// path (no
// server process: throng reads and writes it through the kernel). It
// returns the directory's URL and a function that removes it. listen is
// ignored: there is nothing to listen on.
//
// It measures the client machine's file system and page cache, not a file
// server; for SMB give a target like smb://user@127.0.0.1:445/share/dir.
func ServeEmbedded(listen string) (url string, stop func() error, err error) {
	dir, err := os.MkdirTemp("", "throng-files-")
	if err != nil {
		return "", nil, err
	}
	return "file://" + filepath.ToSlash(dir), func() error { return os.RemoveAll(dir) }, nil
}
