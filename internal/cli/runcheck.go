package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"

	"github.com/throng-io/throng/internal/regfile"
	"github.com/throng-io/throng/internal/result"
)

// checkRunFlags checks, before anything is read or run, the values of the
// run flags that are not scenario settings (runSettings checks those): the
// output paths (checkOutputs), the --prometheus address and the --agents
// addresses (their form only: nothing is listened on or dialled), and
// --agents-wait. Every message starts with its flag; the error has exit 2.
func checkRunFlags(f *runFlags, many bool) error {
	if err := checkOutputs(f, many); err != nil {
		return badInput(err)
	}
	if f.prometheus != "" {
		if err := checkHostPort(f.prometheus, true); err != nil {
			return badInput(fmt.Errorf("--prometheus %s: %w", f.prometheus, err))
		}
	}
	return f.agentFlags.check()
}

// checkHostPort checks the form of a host:port address: a port from 1 to
// 65535 (0, for any free port, when listen), a host without control
// characters or spaces (empty when listen: every interface).
func checkHostPort(addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return unwrapAddr(err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return fmt.Errorf("invalid port %q: want a number from 1 to 65535", port)
	case n == 0 && !listen:
		return errors.New("port 0: want a number from 1 to 65535")
	case host == "" && !listen:
		return errors.New("missing host")
	}
	for _, r := range host {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("host %q has a space or a control character", host)
		}
	}
	return nil
}

// unwrapAddr gives a *net.AddrError's reason alone: the flag names the
// address.
func unwrapAddr(err error) error {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return errors.New(ae.Err)
	}
	return err
}

// checkOutputs refuses, before anything runs, the output paths a run could
// not write as files: --out (a result, or with several scenarios a
// directory), the journal beside it and --junit. A result is written to a
// new file renamed over its path, so a device given as --out (as root,
// `--out /dev/null` once replaced /dev/null with a regular file), a FIFO, a
// socket or a directory would otherwise be replaced or block, or be found
// only once the run is over. What does not exist yet, a regular file and a
// symbolic link to one are fine; "-" (StdoutOut) writes a file of the
// default name.
func checkOutputs(f *runFlags, many bool) error {
	if many {
		if f.out == "" || f.out == StdoutOut {
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
	// Only what is there and is no regular file is refused here: a path
	// that cannot be created (a missing permission, a file as a directory)
	// is found when the journal is created, as before (exit 4).
	check := func(flag, path string) error {
		var nr *regfile.NotRegularError
		if err := regfile.CheckOutput(path); errors.As(err, &nr) {
			return fmt.Errorf("%s %s: %w: a result cannot be written there", flag, path, err)
		}
		return nil
	}
	if f.out != "" && f.out != StdoutOut {
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
