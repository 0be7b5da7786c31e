package scenario

import (
	"errors"
	"fmt"

	"github.com/throng-io/throng/internal/regfile"
)

// MaxFileSize bounds the scenario files read. A scenario is a few
// kilobytes; the bound keeps the YAML parser, whose memory grows by about
// a kilobyte per token, well under 100 MB whatever the file holds, and
// turns a wrong path (a log, a binary) into a message rather than a long
// parse.
const MaxFileSize = 256 << 10

// ReadFile reads a scenario file through regfile: what is not a regular
// file (a directory, a FIFO, a device such as /dev/zero, a socket) is
// refused before a byte is read and never blocks the open; at most
// MaxFileSize bytes are read: a file that grows while it is read is refused
// too.
func ReadFile(path string) ([]byte, error) {
	src, err := regfile.Read(path, MaxFileSize)
	var nr *regfile.NotRegularError
	var tl *regfile.TooLargeError
	switch {
	case errors.As(err, &nr):
		return nil, fmt.Errorf("scenario %s: is %s, not a scenario file (a regular file is needed)", path, regfile.Kind(nr.Mode))
	case errors.As(err, &tl) && tl.Size == 0:
		return nil, fmt.Errorf("scenario %s: too large for a scenario file (at most %d KiB)", path, MaxFileSize>>10)
	case errors.As(err, &tl):
		return nil, fmt.Errorf("scenario %s: %d bytes is too large for a scenario file (at most %d KiB)", path, tl.Size, MaxFileSize>>10)
	case err != nil:
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return src, nil
}
