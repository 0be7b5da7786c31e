package result

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/throng-io/throng/internal/regfile"
)

// Source gives the intervals of a run's repetitions for writing its result:
// those held in the Run, or those of its journal (JournalSource), so a run
// of any length is written without holding its intervals in memory.
type Source interface {
	// Next returns the next interval of the k-th repetition of the run
	// (rep), nil after its last one. An error stops that list (the result
	// says so); the source then returns it for every later repetition too.
	Next(k int, rep *Repetition) (*Interval, error)
}

// MemorySource gives the intervals held in the Run's repetitions.
func MemorySource(run *Run) Source { return &memorySource{run: run} }

type memorySource struct {
	run  *Run
	k, i int
}

func (m *memorySource) Next(k int, _ *Repetition) (*Interval, error) {
	if k != m.k {
		m.k, m.i = k, 0
	}
	ivs := m.run.Repetitions[k].Intervals
	if m.i >= len(ivs) {
		return nil, nil
	}
	m.i++
	return &ivs[m.i-1], nil
}

// JournalSource gives the intervals of the repetitions from a journal's
// records (Journal.Contents, or a journal file), matched by repetition
// index, amendments applied. It reads the journal once, in order, holding
// one interval at a time: the run's repetitions must come in the journal's
// order.
func JournalSource(r io.Reader) Source { return &journalSource{s: newScanner(r)} }

type journalSource struct {
	s       *scanner
	peek    *record   // read ahead: it belongs to a later repetition
	held    *Interval // the next interval, read ahead (an amendment may follow)
	heldRep int
	done    bool  // the journal has no more records
	err     error // reading failed
}

func (j *journalSource) Next(_ int, r *Repetition) (*Interval, error) {
	rep := r.Index
	give := func() *Interval {
		if j.held != nil && j.heldRep == rep {
			iv := j.held
			j.held = nil
			return iv
		}
		return nil
	}
	for {
		if j.err != nil || j.done {
			if iv := give(); iv != nil {
				return iv, nil
			}
			return nil, j.err
		}
		rec := j.peek
		j.peek = nil
		if rec == nil {
			rec, j.err = j.s.next()
			if j.err != nil {
				j.err = fmt.Errorf("reading back the journal: %w", j.err)
			}
			j.done = rec == nil && j.err == nil
			if rec == nil {
				continue
			}
		}
		mine, over, after := placeOf(rec, rep)
		switch {
		case mine && rec.Kind == kindInterval:
			out := give()
			j.held, j.heldRep = rec.Interval, rep
			if out != nil {
				return out, nil
			}
		case mine && rec.Kind == kindAmend:
			if j.held != nil && j.heldRep == rep && j.held.Index == rec.Interval.Index {
				j.held = rec.Interval
			}
		case over:
			if after {
				j.peek = rec // it belongs to a later repetition
			}
			return give(), nil
		}
	}
}

// placeOf says where a record stands for repetition rep: one of its
// intervals or amendments (mine), or the end of it (over) — and then
// whether the record belongs to what comes after (after). Other records are
// skipped.
func placeOf(rec *record, rep int) (mine, over, after bool) {
	switch rec.Kind {
	case kindInterval, kindAmend:
		if rec.Interval == nil {
			return false, false, false
		}
		return rec.Rep == rep, rec.Rep > rep, rec.Rep > rep
	case kindRepetition:
		return false, rec.Index > rep, rec.Index > rep
	case kindRepetitionEnd:
		return false, rec.Index >= rep, rec.Index > rep
	case kindEnd:
		return false, true, true
	}
	return false, false, false
}

// Encode writes run as JSON to w, taking the intervals of its repetitions
// from src. When src fails, the repetition's interval list stops there and
// the repetition gets a taint saying so; its summaries, computed beforehand,
// count every interval all the same.
func Encode(w io.Writer, run *Run, src Source) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	head, err := json.Marshal(runHead{Run: run})
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"repetitions":[`)
	for k := range run.Repetitions {
		rep := &run.Repetitions[k]
		if k > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(repHead{Repetition: rep})
		if err != nil {
			return err
		}
		bw.Write(b[:len(b)-1])
		bw.WriteString(`,"intervals":[`)
		n := 0
		var srcErr error
		for {
			iv, err := src.Next(k, rep)
			if err != nil {
				srcErr = err
				break
			}
			if iv == nil {
				break
			}
			b, err := json.Marshal(iv)
			if err != nil {
				return err
			}
			if n > 0 {
				bw.WriteByte(',')
			}
			bw.Write(b)
			n++
		}
		tail := repTail{Summaries: rep.Summaries, Taints: rep.Taints, Preparation: rep.Preparation}
		if tail.Summaries == nil {
			tail.Summaries = []Summary{}
		}
		if srcErr != nil {
			tail.Taints = append(tail.Taints[:len(tail.Taints):len(tail.Taints)], Taint{Kind: "intervals_missing", Intervals: n, Message: fmt.Sprintf(
				"the interval list stops after %d intervals (%v): the summaries count every interval, the charts and per-interval comparisons only those listed", n, srcErr)})
		}
		b, err = json.Marshal(tail)
		if err != nil {
			return err
		}
		bw.WriteString("],")
		bw.Write(b[1:])
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// runHead is a Run without its repetitions (the field shadows theirs and
// is left empty); repHead a Repetition without its intervals and what
// follows them, repTail; Encode writes the rest between them.
type runHead struct {
	*Run
	Repetitions []Repetition `json:"repetitions,omitempty"`
}

type repHead struct {
	*Repetition
	Intervals   []Interval   `json:"intervals,omitempty"`
	Summaries   []Summary    `json:"summaries,omitempty"`
	Taints      []Taint      `json:"taints,omitempty"`
	Preparation *Preparation `json:"preparation,omitempty"`
}

type repTail struct {
	Summaries   []Summary    `json:"summaries"`
	Taints      []Taint      `json:"taints,omitempty"`
	Preparation *Preparation `json:"preparation,omitempty"`
}

// WriteFile writes a run whose intervals it holds to path (see WriteAt).
func WriteFile(path string, run *Run) error {
	return WriteAt(path, run, MemorySource(run))
}

// WriteAt writes the run as JSON to path atomically: to a new file in the
// same directory (mode FileMode), flushed to the disk, then renamed over
// path. On failure path is left as it was and the error names it. A path
// that is there and is not a regular file (or a link to one) is refused
// (regfile.CheckOutput): the rename would replace a device node or a FIFO.
func WriteAt(path string, run *Run, src Source) error {
	return WriteAtomic(path, func(w io.Writer) error { return Encode(w, run, src) })
}

// WriteAtomic writes what write writes to path atomically: to a new file
// in the same directory (mode FileMode), flushed to the disk, then renamed
// over path. On failure path is left as it was and the error names it. A
// path that is there and is not a regular file (or a link to one) is
// refused (regfile.CheckOutput). Every file of throng's (a run's result, a
// capacity search's record) is written so.
func WriteAtomic(path string, write func(w io.Writer) error) error {
	if err := regfile.CheckOutput(path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", path, cause(err))
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", path, cause(err))
	}
	if err := errors.Join(write(tmp), tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, cause(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, cause(err))
	}
	return nil
}

// createTemp creates a new file in dir with mode FileMode (less the umask,
// as the journal), unlike os.CreateTemp's 0600.
func createTemp(dir string) (*os.File, error) {
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		f, err := os.OpenFile(filepath.Join(dir, ".throng-"+hex.EncodeToString(b[:])+".json"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, FileMode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, errors.New("cannot create a temporary file")
}

// cause strips an *fs.PathError of its operation and path (the caller names
// the file the user knows, not a temporary one).
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// FallbackPath is where Save writes a result its own path cannot take: the
// system's temporary directory ($TMPDIR, else /tmp), under the same name.
func FallbackPath(path string) string {
	return filepath.Join(os.TempDir(), filepath.Base(path))
}

// Save writes the run to path (WriteAt), and when that fails, to
// FallbackPath. It returns where the result went — "" when nowhere — and,
// when that is not path, every error met on the way. newSource gives a
// fresh source for each attempt.
func Save(path string, run *Run, newSource func() Source) (string, error) {
	err := WriteAt(path, run, newSource())
	if err == nil {
		return path, nil
	}
	fb := FallbackPath(path)
	if a, b := abs(fb), abs(path); a == b {
		return "", err
	}
	if ferr := WriteAt(fb, run, newSource()); ferr != nil {
		return "", fmt.Errorf("%w; %w", err, ferr)
	}
	return fb, err
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
