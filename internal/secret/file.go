package secret

import "github.com/throng-io/throng/internal/regfile"

// ReadFile reads the regular file at path, at most max bytes, through
// regfile.Read: a directory, a FIFO, a device or a socket is refused with
// a message saying what it is, never waited on or read without end; a file
// over max bytes is refused, not truncated. The message does not repeat
// path; callers name it.
func ReadFile(path string, max int64) ([]byte, error) { return regfile.Read(path, max) }
