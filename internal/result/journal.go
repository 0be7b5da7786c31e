package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The journal is the run's record written while it goes on: JSON Lines, one
// record per line, flushed after every interval, so a run cut short (Ctrl-C,
// kill -9, a crash) keeps everything up to its last interval. A journal that
// ends without an "end" record is a partial run.
//
//	{"kind":"meta","meta":{...}}
//	{"kind":"repetition","index":0,"started_at":"..."}
//	{"kind":"interval","rep":0,"interval":{...}}
//	{"kind":"repetition_end","index":0,"elapsed_s":12.3,"partial":false}
//	{"kind":"end","partial":false}
type record struct {
	Kind      string     `json:"kind"`
	Meta      *Meta      `json:"meta,omitempty"`
	Index     int        `json:"index,omitempty"`
	Rep       int        `json:"rep,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	Interval  *Interval  `json:"interval,omitempty"`
	ElapsedS  float64    `json:"elapsed_s,omitempty"`
	Partial   bool       `json:"partial,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Aborted   uint64     `json:"aborted,omitempty"`
	Taints    []Taint    `json:"taints,omitempty"`
}

// JournalPath returns the journal's path for a result path:
// "out/run.json" -> "out/run.journal.jsonl".
func JournalPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".journal.jsonl"
}

// Journal appends records to a journal file. It is used by one goroutine.
type Journal struct {
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error // first write error; later writes are skipped
}

// CreateJournal creates (truncates) the journal file, making its directory.
func CreateJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the results directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot write the journal: %w", err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	return &Journal{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

func (j *Journal) write(r *record) error {
	if j.err != nil {
		return j.err
	}
	if err := j.enc.Encode(r); err != nil {
		j.err = err
		return err
	}
	if err := j.w.Flush(); err != nil {
		j.err = fmt.Errorf("journal: %w", err)
	}
	return j.err
}

// Meta writes the run's metadata; it is the first record.
func (j *Journal) Meta(m *Meta) error { return j.write(&record{Kind: "meta", Meta: m}) }

// Repetition marks the start of repetition index.
func (j *Journal) Repetition(index int, start time.Time) error {
	return j.write(&record{Kind: "repetition", Index: index, StartedAt: &start})
}

// Interval writes one interval of repetition rep and flushes it to the file.
func (j *Journal) Interval(rep int, iv *Interval) error {
	return j.write(&record{Kind: "interval", Rep: rep, Interval: iv})
}

// RepetitionEnd closes repetition r.
func (j *Journal) RepetitionEnd(r *Repetition) error {
	return j.write(&record{Kind: "repetition_end", Index: r.Index, ElapsedS: r.ElapsedS,
		Partial: r.Partial, Reason: r.Reason, Aborted: r.Aborted, Taints: r.Taints})
}

// End closes the journal with the run's final state.
func (j *Journal) End(partial bool, reason string) error {
	return j.write(&record{Kind: "end", Partial: partial, Reason: reason})
}

// Close flushes and closes the file.
func (j *Journal) Close() error {
	ferr := j.w.Flush()
	cerr := j.f.Close()
	return errors.Join(j.err, ferr, cerr)
}

// ReadJournal rebuilds a Run from a journal. A journal cut short (no end
// record, or a last line cut in the middle) gives a Run marked partial that
// holds every complete interval.
func ReadJournal(r io.Reader) (*Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	run := &Run{Schema: Schema}
	var cur *Repetition
	ended, sawMeta := false, false
	line := 0
	var cut string
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			// A line cut by a kill is only possible at the end.
			cut = fmt.Sprintf("line %d is incomplete (%v)", line, err)
			continue
		}
		if cut != "" {
			return nil, fmt.Errorf("journal: %s, yet more records follow: the file is damaged", cut)
		}
		switch rec.Kind {
		case "meta":
			if rec.Meta == nil {
				return nil, fmt.Errorf("journal line %d: meta record without metadata", line)
			}
			run.Meta = *rec.Meta
			sawMeta = true
		case "repetition":
			run.Repetitions = append(run.Repetitions, Repetition{Index: rec.Index})
			cur = &run.Repetitions[len(run.Repetitions)-1]
			if rec.StartedAt != nil {
				cur.StartedAt = *rec.StartedAt
			}
		case "interval":
			if cur == nil || rec.Interval == nil || rec.Rep != cur.Index {
				return nil, fmt.Errorf("journal line %d: interval outside its repetition", line)
			}
			cur.Intervals = append(cur.Intervals, *rec.Interval)
		case "repetition_end":
			if cur == nil || rec.Index != cur.Index {
				return nil, fmt.Errorf("journal line %d: end of a repetition that did not start", line)
			}
			cur.ElapsedS, cur.Partial, cur.Reason, cur.Aborted, cur.Taints = rec.ElapsedS, rec.Partial, rec.Reason, rec.Aborted, rec.Taints
			cur = nil
		case "end":
			ended = true
			run.Partial, run.Reason = rec.Partial, rec.Reason
		default:
			return nil, fmt.Errorf("journal line %d: unknown record kind %q", line, rec.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if !sawMeta {
		return nil, errors.New("journal: no metadata record; this is not a throng journal")
	}
	if cur != nil {
		// The repetition was cut: its length is what its intervals cover.
		cur.Partial = true
		cur.Reason = "cut short: the journal ends inside this repetition"
		if n := len(cur.Intervals); n > 0 {
			last := cur.Intervals[n-1]
			cur.ElapsedS = last.StartS + last.DurationS
		}
	}
	if !ended {
		run.Partial = true
		n := 0
		for _, r := range run.Repetitions {
			n += len(r.Intervals)
		}
		run.Reason = fmt.Sprintf("the run was cut short (killed or crashed): the journal ends after %d intervals without an end record", n)
	}
	for i := range run.Repetitions {
		r := &run.Repetitions[i]
		r.Summaries = Summarize(run.Meta.Actions, len(run.Meta.Events), r.Intervals)
	}
	return run, nil
}

// WriteFile writes the run as JSON to path atomically: to a temporary file
// in the same directory, then renamed over path.
func WriteFile(path string, run *Run) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".throng-*.json")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 256<<10)
	enc := json.NewEncoder(w)
	if err := enc.Encode(run); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := errors.Join(w.Flush(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadFile reads a run from a result file or a journal (recognised by its
// first record), so `throng report` works on both.
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(64)
	if bytes.Contains(head, []byte(`"kind"`)) {
		return ReadJournal(br)
	}
	var run Run
	dec := json.NewDecoder(br)
	if err := dec.Decode(&run); err != nil {
		return nil, fmt.Errorf("%s: not a throng result: %w", path, err)
	}
	if !strings.HasPrefix(run.Schema, "throng.run/") {
		return nil, fmt.Errorf("%s: not a throng result (schema %q)", path, run.Schema)
	}
	if run.Schema != Schema {
		return nil, fmt.Errorf("%s: result schema %s is not %s, the one this throng reads", path, run.Schema, Schema)
	}
	return &run, nil
}
