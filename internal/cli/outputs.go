package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/throng-io/throng/internal/regfile"
	"github.com/throng-io/throng/internal/result"
)

// checkOutputs refuses, before anything runs, the output paths a run could
// not write as files: --out (a result, or with several scenarios a
// directory), the journal beside it and --junit. A result is written to a
// new file renamed over its path, so a device given as --out (as root,
// `--out /dev/null` once replaced /dev/null with a regular file), a FIFO, a
// socket or a directory would otherwise be replaced or block, or be found
// only once the run is over. What does not exist yet, a regular file and a
// symbolic link to one are fine.
func checkOutputs(f *runFlags, many bool) error {
	if many {
		if f.out == "" {
			return nil
		}
		fi, err := os.Stat(f.out)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("--out %s: %w", f.out, unwrapPath(err))
		case !fi.IsDir():
			return fmt.Errorf("--out %s: with several scenarios --out is a directory; this is %s", f.out, fileKind(fi.Mode()))
		}
		return nil
	}
	check := func(flag, path string) error {
		if err := regfile.CheckOutput(path); err != nil {
			return fmt.Errorf("%s %s: %w: a result cannot be written there", flag, path, err)
		}
		return nil
	}
	if f.out != "" {
		if err := check("--out", f.out); err != nil {
			return err
		}
		if j := result.JournalPath(f.out); j != f.out {
			if err := check("--out "+f.out+": its journal", j); err != nil {
				return err
			}
		}
	}
	if f.junit != "" {
		return check("--junit", f.junit)
	}
	return nil
}

// fileKind names what a file is: "a regular file" or regfile.Kind.
func fileKind(m fs.FileMode) string {
	if m.IsRegular() {
		return "a regular file"
	}
	return regfile.Kind(m)
}

// unwrapPath drops the *PathError's operation and path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
