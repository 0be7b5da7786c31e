package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// StdoutOut is the --out value that writes the result JSON to standard
// output, as `-o -` does in most Unix tools.
const StdoutOut = "-"

// output is where a run's result goes: a file, and with -o - a copy of it
// on standard output (the summary then goes to standard error, so that
// stdout holds only the JSON). The file is written in both cases: the
// journal needs a place, and nothing recorded is ever lost when the pipe
// breaks.
type output struct {
	path   string
	stdout bool
}

// resolveOut reads --out for a run of the scenario named name: "" and "-"
// give the default file under results/.
func resolveOut(flag, name string) output {
	switch flag {
	case "":
		return output{path: defaultOut(name)}
	case StdoutOut:
		return output{path: defaultOut(name), stdout: true}
	}
	return output{path: flag}
}

// summary is where the run's text summary goes.
func (o output) summary(stdout, stderr io.Writer) io.Writer {
	if o.stdout {
		return stderr
	}
	return stdout
}

// emit copies the result file to stdout when -o - asked for it, and
// returns the run's outcome err (a failed copy is added to it).
func (o output) emit(stdout io.Writer, err error) error {
	if !o.stdout {
		return err
	}
	b, rerr := os.ReadFile(o.path)
	if rerr != nil {
		// No result file: the run's own error says why.
		if err == nil {
			err = failure(fmt.Errorf("-o -: %w", rerr))
		}
		return err
	}
	if _, werr := stdout.Write(b); werr != nil {
		werr = failure(fmt.Errorf("-o -: writing the result to stdout: %w (it is in %s)", werr, o.path))
		if err == nil {
			return werr
		}
		return errors.Join(err, werr)
	}
	return err
}
