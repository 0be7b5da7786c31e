package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/throng-io/throng/internal/regfile"
)

// maxLine bounds one journal line: an interval of many actions and counter
// series is tens of kilobytes; a longer line is not a journal's.
const maxLine = 64 << 20

// FormatError is a file that is not a throng result or journal, or is
// damaged: where (the file, and the line for a journal) and why. It is bad
// input, not a failure to read.
type FormatError struct {
	Path string
	Line int // 0: not about one line
	Err  error
}

func (e *FormatError) Error() string {
	switch {
	case e.Path != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	case e.Path != "":
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return e.Err.Error()
}

func (e *FormatError) Unwrap() error { return e.Err }

func lineErr(line int, format string, args ...any) error {
	return &FormatError{Line: line, Err: fmt.Errorf(format, args...)}
}

// scanner reads a journal's records in order.
type scanner struct {
	sc    *bufio.Scanner
	line  int    // the line of the record last returned
	cut   string // the last line did not parse, and why (a write cut by a kill)
	cutAt int
}

func newScanner(r io.Reader) *scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	return &scanner{sc: sc}
}

// next returns the next record, or nil at the end of the journal. A line
// that does not parse ends the journal when it is the last one (a write cut
// by a kill; s.cut says so); followed by another record it is an error.
func (s *scanner) next() (*record, error) {
	for s.sc.Scan() {
		s.line++
		b := bytes.TrimSpace(s.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if s.cut != "" {
			return nil, lineErr(s.cutAt, "%s, yet more records follow: the journal is damaged", s.cut)
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			s.cut, s.cutAt = fmt.Sprintf("not a whole record (%v)", err), s.line
			continue
		}
		return &rec, nil
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, lineErr(s.line+1, "longer than %d MiB: not a throng journal line", maxLine>>20)
		}
		return nil, fmt.Errorf("line %d: %w", s.line+1, err)
	}
	return nil, nil
}

// ReadJournal rebuilds a Run from a journal. A journal cut short (no end
// record, or a last line cut in the middle) gives a Run marked partial that
// holds every complete interval. A damaged journal gives a *FormatError
// with the line.
func ReadJournal(r io.Reader) (*Run, error) {
	s := newScanner(r)
	run := &Run{Schema: Schema}
	var cur *Repetition
	ended, sawMeta := false, false
	// cutShort marks an open repetition as stopped where its intervals end.
	cutShort := func() {
		if cur == nil {
			return
		}
		cur.Partial = true
		cur.Reason = "cut short: the journal ends inside this repetition"
		if n := len(cur.Intervals); n > 0 {
			last := cur.Intervals[n-1]
			cur.ElapsedS = last.StartS + last.DurationS
		}
		cur = nil
	}
	for {
		rec, err := s.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		line := s.line
		switch {
		case !sawMeta && rec.Kind != kindMeta:
			return nil, lineErr(line, "a journal begins with its meta record, not %q: this is not a throng journal", rec.Kind)
		case ended:
			return nil, lineErr(line, "a %q record after the end record", rec.Kind)
		}
		switch rec.Kind {
		case kindMeta:
			if sawMeta || rec.Meta == nil {
				return nil, lineErr(line, "a second meta record, or one without metadata")
			}
			run.Meta = *rec.Meta
			sawMeta = true
		case kindRepetition:
			cutShort()
			run.Repetitions = append(run.Repetitions, Repetition{Index: rec.Index})
			cur = &run.Repetitions[len(run.Repetitions)-1]
			if rec.StartedAt != nil {
				cur.StartedAt = *rec.StartedAt
			}
		case kindInterval:
			if cur == nil || rec.Interval == nil || rec.Rep != cur.Index {
				return nil, lineErr(line, "an interval outside its repetition")
			}
			cur.Intervals = append(cur.Intervals, *rec.Interval)
		case kindAmend:
			n := 0
			if cur != nil {
				n = len(cur.Intervals)
			}
			if n == 0 || rec.Interval == nil || rec.Rep != cur.Index || cur.Intervals[n-1].Index != rec.Interval.Index {
				return nil, lineErr(line, "an amend record that replaces no interval")
			}
			cur.Intervals[n-1] = *rec.Interval
		case kindRepetitionEnd:
			if cur == nil || rec.Index != cur.Index {
				return nil, lineErr(line, "the end of a repetition that did not start")
			}
			cur.ElapsedS, cur.DrainS, cur.Partial, cur.Reason, cur.Aborted, cur.Taints = rec.ElapsedS, rec.DrainS, rec.Partial, rec.Reason, rec.Aborted, rec.Taints
			cur = nil
		case kindEnd:
			cutShort() // a repetition that could not start has no end
			ended = true
			run.Partial, run.Reason = rec.Partial, rec.Reason
		default:
			return nil, lineErr(line, "unknown record kind %q", rec.Kind)
		}
	}
	if !sawMeta {
		return nil, &FormatError{Err: errors.New("no metadata record: this is not a throng journal")}
	}
	cutShort()
	if !ended {
		run.Partial = true
		n := 0
		for _, r := range run.Repetitions {
			n += len(r.Intervals)
		}
		run.Reason = fmt.Sprintf("the run was cut short (killed or crashed): the journal ends after %d intervals without an end record", n)
	}
	if err := run.check(); err != nil {
		return nil, err
	}
	for i := range run.Repetitions {
		r := &run.Repetitions[i]
		r.Summaries = Summarize(run.Meta.Actions, len(run.Meta.Events), r.Intervals)
	}
	return run, nil
}

// ReadFile reads a run from a result file or a journal (recognised by its
// first record), so `throng report` works on both. A file that is neither,
// or is damaged, gives a *FormatError naming it (and the line, in a
// journal); one that cannot be read gives the system's error. Only regular
// files are read: a FIFO or a device would block or never end.
func ReadFile(path string) (*Run, error) {
	f, _, err := regfile.Open(path)
	var nr *regfile.NotRegularError
	if errors.As(err, &nr) {
		return nil, &FormatError{Path: path, Err: fmt.Errorf("not a regular file (%s): a result or journal is a file", regfile.Kind(nr.Mode))}
	} else if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer f.Close()
	run, err := Read(f)
	var fe *FormatError
	if errors.As(err, &fe) && fe.Path == "" {
		fe.Path = path
	}
	return run, err
}

// Read reads a run from a result or a journal (see ReadFile).
func Read(r io.Reader) (*Run, error) {
	br := bufio.NewReader(r)
	// A journal's first record begins with its kind; a result with its
	// schema.
	head, _ := br.Peek(64)
	if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(`{"kind"`)) {
		return ReadJournal(br)
	}
	var run Run
	dec := json.NewDecoder(br)
	if err := dec.Decode(&run); err != nil {
		return nil, &FormatError{Err: fmt.Errorf("not a throng result: %w", err)}
	}
	if !strings.HasPrefix(run.Schema, "throng.run/") {
		return nil, &FormatError{Err: fmt.Errorf("not a throng result (schema %q)", run.Schema)}
	}
	if run.Schema != Schema && run.Schema != schema1 {
		return nil, &FormatError{Err: fmt.Errorf("result schema %s is not %s, the one this throng reads", run.Schema, Schema)}
	}
	if err := run.check(); err != nil {
		return nil, err
	}
	return &run, nil
}
