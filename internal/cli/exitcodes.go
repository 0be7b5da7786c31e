package cli

// Exit codes of the throng command. Scripts and CI may rely on them.
const (
	// ExitOK: the command did what was asked; a run finished as planned
	// and met its thresholds.
	ExitOK = 0
	// ExitThresholds: the run finished but at least one threshold failed
	// (CI systems read exit code 1 as a failed test).
	ExitThresholds = 1
	// ExitBadInput: the scenario file, a flag or an argument is wrong; the
	// messages say where (file:line:col) and why. Nothing was run.
	ExitBadInput = 2
	// ExitPartial: the run stopped before its plan was done (max_duration),
	// or a repetition could not run; the partial result was written.
	ExitPartial = 3
	// ExitFailure: the command could not do its work: the target refused or
	// could not be resolved, a result could not be written, a file could not
	// be read, an agent could not be reached, or the plan asks for more
	// than can be done (a schedule beyond the engine's limits, more memory
	// than the machine has), refused before anything ran.
	ExitFailure = 4
	// ExitInterrupted: stopped by Ctrl-C (SIGINT); the partial result was
	// written (128 + 2, as a shell reports a process killed by SIGINT).
	ExitInterrupted = 130
	// ExitTerminated: stopped by SIGTERM; the partial result was written
	// (128 + 15).
	ExitTerminated = 143
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func badInput(err error) error { return &exitError{ExitBadInput, err} }
func failure(err error) error  { return &exitError{ExitFailure, err} }
