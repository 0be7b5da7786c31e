package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/regfile"
)

// The journal is the run's record written while it goes on: JSON Lines, one
// record per line, each written to the file as soon as it is made, so a run
// cut short (Ctrl-C, kill -9, a crash) keeps everything up to its last
// interval. A journal that ends without an "end" record is a partial run.
//
//	{"kind":"meta","meta":{...}}
//	{"kind":"repetition","index":0,"started_at":"..."}
//	{"kind":"interval","rep":0,"interval":{...}}
//	{"kind":"amend","rep":0,"interval":{...}}
//	{"kind":"repetition_end","index":0,"elapsed_s":12.3,"partial":false}
//	{"kind":"end","partial":false}
//
// An "amend" record replaces the repetition's last interval (same index):
// the engine adds to it what finished in the very instant of its final cut.
// It has a kind of its own so that a reader that does not know it refuses
// the journal rather than counting those actions twice.
type record struct {
	Kind      string     `json:"kind"`
	Meta      *Meta      `json:"meta,omitempty"`
	Index     int        `json:"index,omitempty"`
	Rep       int        `json:"rep,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	Interval  *Interval  `json:"interval,omitempty"`
	ElapsedS  float64    `json:"elapsed_s,omitempty"`
	DrainS    float64    `json:"drain_s,omitempty"`
	Partial   bool       `json:"partial,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Aborted   uint64     `json:"aborted,omitempty"`
	Taints    []Taint    `json:"taints,omitempty"`
}

// Record kinds.
const (
	kindMeta          = "meta"
	kindRepetition    = "repetition"
	kindInterval      = "interval"
	kindAmend         = "amend"
	kindRepetitionEnd = "repetition_end"
	kindEnd           = "end"
)

// JournalPath returns the journal's path for a result path:
// "out/run.json" -> "out/run.journal.jsonl".
func JournalPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".journal.jsonl"
}

// MaxJournalPending bounds the memory a journal uses to keep the records
// its file could not take (a full disk): 64 MiB, about half an hour of
// one-second intervals of a scenario with a few actions and the machine's
// counters. Past it, interval records are dropped and counted (Lost); the
// other records are small and always kept.
const MaxJournalPending = 64 << 20

// FileMode is the mode of the journal and of the result file, before the
// umask: readable by all, like most tools' output. A result holds no secret
// (secrets come from the environment or files at run time and are never
// written; docs/results.md), and is meant to be shared; a umask of 077 makes
// both private.
const FileMode = 0o644

// Journal appends records to a journal file. Each record goes to the file
// as it is made. One the file cannot take (a full disk, a quota, an I/O
// error) is kept in memory, in order, and written with the next record or at
// Close: the file always holds a prefix of the journal, and Contents the
// whole of it. It is used by one goroutine.
type Journal struct {
	path       string
	f          *os.File
	written    int64  // bytes in the file
	pending    []byte // the records not yet in the file, in order
	marks      []mark // the ends of the pending records, in the stream
	err        error  // the last write error while pending is not empty
	firstErr   error  // the first write error ever
	intervals  int    // interval records accepted
	inFile     int    // interval records wholly in the file
	lost       []Lost // interval records dropped, by repetition
	maxPending int
	buf        bytes.Buffer
	fallback   string // where the journal moves when memory is full too ("" never)
	movedFrom  string // the path it was created at, once it moved
	moveErr    error  // why it could not move
}

// mark is where a pending record ends in the journal's byte stream.
type mark struct {
	end      int64
	interval bool
}

// Lost counts intervals of a repetition that a journal could not keep: its
// file refused them and its memory bound was reached (or, a bug, they could
// not be encoded).
type Lost struct {
	Rep, First, Last, N int    // repetition, first and last interval index, how many
	Why                 string // in words
}

// CreateJournal creates (truncates) the journal file, making its directory.
func CreateJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the results directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, FileMode)
	if err != nil {
		return nil, fmt.Errorf("cannot write the journal: %w", err)
	}
	return &Journal{path: path, f: f, maxPending: MaxJournalPending, fallback: FallbackPath(path)}, nil
}

// Path returns the journal file's path: where it was created, or where it
// moved (Moved).
func (j *Journal) Path() string { return j.path }

// Moved reports whether the journal moved to its fallback path.
func (j *Journal) Moved() bool { return j.movedFrom != "" }

// write encodes r and writes it after whatever is pending. It returns nil
// when the record is in the file, else why not (the record is then kept in
// memory, or dropped and counted when it is an interval past the bound).
func (j *Journal) write(r *record) error {
	j.buf.Reset()
	isIv := r.Kind == kindInterval || r.Kind == kindAmend
	if err := json.NewEncoder(&j.buf).Encode(r); err != nil {
		err = fmt.Errorf("journal: cannot encode the %s record: %w", r.Kind, err)
		if isIv {
			j.drop(r, err.Error())
		}
		return err
	}
	if isIv && len(j.pending) > 0 && len(j.pending)+j.buf.Len() > j.maxPending && !j.move() {
		why := fmt.Sprintf("the journal's file refused them (%v) and the %s of memory that holds such records was full", j.err, binarySize(j.maxPending))
		if j.moveErr != nil {
			why += fmt.Sprintf("; it could not be moved either (%v)", j.moveErr)
		}
		j.drop(r, why)
		return j.flush()
	}
	if r.Kind == kindInterval {
		j.intervals++
	}
	j.pending = append(j.pending, j.buf.Bytes()...)
	j.marks = append(j.marks, mark{end: j.written + int64(len(j.pending)), interval: r.Kind == kindInterval})
	return j.flush()
}

// drop counts an interval record that could not be kept, and why.
func (j *Journal) drop(r *record, why string) {
	if r.Kind == kindAmend {
		// The interval it amends is in the journal: only what finished in
		// the instant of the last cut is missing from it.
		return
	}
	j.intervals++
	idx := r.Interval.Index
	if n := len(j.lost); n > 0 && j.lost[n-1].Rep == r.Rep && j.lost[n-1].Why == why {
		j.lost[n-1].Last = idx
		j.lost[n-1].N++
		return
	}
	j.lost = append(j.lost, Lost{Rep: r.Rep, First: idx, Last: idx, N: 1, Why: why})
}

// binarySize writes n bytes as "64 MiB" or "16 KiB".
func binarySize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// flush writes what is pending. It returns nil when the file holds every
// record accepted.
func (j *Journal) flush() error {
	if len(j.pending) == 0 {
		return nil
	}
	n, err := j.f.Write(j.pending)
	if j.wrote(n) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("write %s: %w", j.path, io.ErrShortWrite)
	}
	j.err = err // an *os.PathError: "write PATH: no space left on device"
	if j.firstErr == nil {
		j.firstErr = j.err
	}
	return j.err
}

// wrote accounts for n pending bytes written to the file; it reports
// whether none is left pending.
func (j *Journal) wrote(n int) bool {
	j.written += int64(n)
	j.pending = j.pending[n:]
	k := 0
	for k < len(j.marks) && j.marks[k].end <= j.written {
		if j.marks[k].interval {
			j.inFile++
		}
		k++
	}
	j.marks = j.marks[k:]
	if len(j.pending) == 0 {
		j.pending, j.err = nil, nil // let go of a large buffer
		return true
	}
	return false
}

// move is the last resort of a journal whose file refuses records and
// whose memory for them is full: the whole journal so far (the file's
// bytes, then the pending ones) is copied to its fallback path (the
// system's temporary directory), flushed, and the journal goes on there;
// the file it was created at, a prefix of the copy, is removed. It is
// tried once; it reports whether the journal moved.
func (j *Journal) move() bool {
	if j.movedFrom != "" || j.moveErr != nil {
		return false
	}
	if j.fallback == "" || abs(j.fallback) == abs(j.path) {
		j.moveErr = errors.New("no other place: it is in the temporary directory")
		return false
	}
	fb := j.fallback
	err := regfile.CheckOutput(fb)
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(fb, os.O_CREATE|os.O_TRUNC|os.O_RDWR, FileMode)
	}
	if err == nil {
		_, err = io.Copy(f, io.NewSectionReader(j.f, 0, j.written))
		if err == nil {
			_, err = f.Write(j.pending)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			os.Remove(fb)
		}
	}
	if err != nil {
		j.moveErr = fmt.Errorf("to %s: %w", fb, cause(err))
		return false
	}
	if old, err := j.f.Stat(); err == nil {
		if now, err := os.Stat(j.path); err == nil && os.SameFile(old, now) {
			os.Remove(j.path)
		}
	}
	j.f.Close()
	j.f, j.movedFrom, j.path = f, j.path, fb
	j.wrote(len(j.pending))
	return true
}

// Meta writes the run's metadata; it is the first record.
func (j *Journal) Meta(m *Meta) error { return j.write(&record{Kind: kindMeta, Meta: m}) }

// Repetition marks the start of repetition index.
func (j *Journal) Repetition(index int, start time.Time) error {
	return j.write(&record{Kind: kindRepetition, Index: index, StartedAt: &start})
}

// Interval writes one interval of repetition rep.
func (j *Journal) Interval(rep int, iv *Interval) error {
	return j.write(&record{Kind: kindInterval, Rep: rep, Interval: iv})
}

// Amend replaces the last interval of repetition rep (same index).
func (j *Journal) Amend(rep int, iv *Interval) error {
	return j.write(&record{Kind: kindAmend, Rep: rep, Interval: iv})
}

// RepetitionEnd closes repetition r.
func (j *Journal) RepetitionEnd(r *Repetition) error {
	return j.write(&record{Kind: kindRepetitionEnd, Index: r.Index, ElapsedS: r.ElapsedS, DrainS: r.DrainS,
		Partial: r.Partial, Reason: r.Reason, Aborted: r.Aborted, Taints: r.Taints})
}

// End closes the journal with the run's final state.
func (j *Journal) End(partial bool, reason string) error {
	return j.write(&record{Kind: kindEnd, Partial: partial, Reason: reason})
}

// JournalState says how much of a journal is in its file.
type JournalState struct {
	Intervals int    // interval records made
	InFile    int    // of which wholly in the file
	Lost      []Lost // of which dropped: neither in the file nor kept
	Pending   int    // bytes kept in memory, not yet in the file
	Err       error  // why the file does not hold everything (nil when it does)
	FirstErr  error  // the first write error, even when later writes caught up
	MovedFrom string // the path the journal was created at, when it moved to Path
	Path      string // the journal's file now
}

// Complete reports whether the file holds every record made.
func (s JournalState) Complete() bool { return s.Pending == 0 && len(s.Lost) == 0 }

// LostIn returns the runs of intervals of repetition rep that were dropped.
func (s JournalState) LostIn(rep int) []Lost {
	var out []Lost
	for _, l := range s.Lost {
		if l.Rep == rep {
			out = append(out, l)
		}
	}
	return out
}

// State retries writing what is pending and returns the journal's state.
func (j *Journal) State() JournalState {
	j.flush()
	return JournalState{Intervals: j.intervals, InFile: j.inFile, Lost: append([]Lost(nil), j.lost...),
		Pending: len(j.pending), Err: j.err, FirstErr: j.firstErr, MovedFrom: j.movedFrom, Path: j.path}
}

// Contents returns the whole journal as made so far — the file's bytes,
// then the records kept in memory — for reading back while the journal is
// open (the file is read through its own descriptor, whatever happened to
// its name).
func (j *Journal) Contents() io.Reader {
	return io.MultiReader(io.NewSectionReader(j.f, 0, j.written), bytes.NewReader(j.pending))
}

// Offset is the journal's length so far, in bytes: where the next record
// starts in Contents.
func (j *Journal) Offset() int64 { return j.written + int64(len(j.pending)) }

// ContentsFrom is Contents from byte off (an Offset taken earlier): a
// repetition's records are read back from where they start, not from the
// journal's beginning, so reading every repetition back is one pass.
func (j *Journal) ContentsFrom(off int64) io.Reader {
	off = max(0, off)
	if off >= j.written {
		return bytes.NewReader(j.pending[min(off-j.written, int64(len(j.pending))):])
	}
	return io.MultiReader(io.NewSectionReader(j.f, off, j.written-off), bytes.NewReader(j.pending))
}

// Close writes what is pending if it can and closes the file. It returns
// an error when the file does not hold every record made.
func (j *Journal) Close() error {
	st := j.State()
	cerr := j.f.Close()
	var err error
	if st.Pending > 0 {
		err = fmt.Errorf("the journal %s stops after %d of %d intervals: %w", j.path, st.InFile, st.Intervals, st.Err)
	}
	return errors.Join(err, cerr)
}
