package runner

// Kind says why a job could not be prepared, so that a command chooses its
// exit code from it.
type Kind int

const (
	// BadInput: the scenario or a setting is wrong; every message says
	// where (file:line:col, the key path, or where a setting came from).
	BadInput Kind = iota + 1
	// Unable: the work cannot be done here: the embedded server would not
	// start, the target does not answer (Preflight), the plan is beyond
	// the engine's schedule or the machine's memory.
	Unable
	// Stopped: the context ended while the job was being prepared.
	Stopped
)

// Error is why a job could not be prepared, with its Kind. Its text is the
// cause's.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func badInput(err error) error { return &Error{BadInput, err} }
func unable(err error) error   { return &Error{Unable, err} }
