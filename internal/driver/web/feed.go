package web

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/regfile"
	"github.com/throng-io/throng/internal/scenario"
)

// Feed orders: which row a user's iteration gets.
const (
	// OrderPerUser: user i gets row i for its whole life (a log-in per
	// user). No two users anywhere share a row, since user numbers are
	// global across segments and agents.
	OrderPerUser = "per_user"
	// OrderUnique: every iteration of every user gets a row no other
	// iteration of the plan gets: user i's k-th iteration takes row
	// k*users + i.
	OrderUnique = "unique"
	// OrderRoundRobin: as unique, wrapping around the file: rows are
	// reused evenly.
	OrderRoundRobin = "round_robin"
	// OrderRandom: a row drawn from the user's seeded stream at each
	// iteration.
	OrderRandom = "random"
)

// feedSpec is one entry of the web block's feeds.
type feedSpec struct {
	Name  string `yaml:"name"`
	File  string `yaml:"file"`  // a CSV file (its first row names the columns) or JSON lines (.jsonl, .ndjson)
	Order string `yaml:"order"` // per_user (default), unique, round_robin, random
	// Reuse declares that rows may serve more than one user (per_user) or
	// iteration (unique) when the file is shorter than the plan needs;
	// without it, a file too short is refused before the run.
	Reuse bool `yaml:"reuse"`
	// Rows are the rows written in the scenario instead of a file.
	Rows []map[string]string `yaml:"rows"`
}

// feed is a loaded data feed. Its data is kept once, read-only (a file is
// memory-mapped where the system allows), with the offset of each row:
// users decode the row they get when they get it, so nothing is copied per
// user. It is safe for concurrent use.
type feed struct {
	name    string
	order   string
	reuse   bool
	file    string // as written, for messages
	columns []string
	data    []byte   // the file's bytes (mapped)
	offs    []uint64 // byte offset of each row in data, and the end of the last
	jsonl   bool
	rows    []map[string]string // inline rows
	unmap   func() error
	node    scenario.Node
}

// size is the number of rows.
func (f *feed) size() int {
	if f.rows != nil {
		return len(f.rows)
	}
	return len(f.offs) - 1
}

// rowFor returns the index of the row for a user's iteration (from 0),
// and false when a unique feed without reuse has no row left for it.
func (f *feed) rowFor(user, users, iteration int, r *userRand) (int, bool) {
	n := f.size()
	var i int
	switch f.order {
	case OrderPerUser:
		i = user
	case OrderUnique, OrderRoundRobin:
		i = iteration*users + user
	case OrderRandom:
		return r.r.IntN(n), true
	}
	if i >= n && f.order != OrderRoundRobin && !f.reuse {
		return 0, false
	}
	return i % n, true
}

// row decodes row i into vars.
func (f *feed) row(i int, vars map[string]any) error {
	if f.rows != nil {
		for k, v := range f.rows[i] {
			vars[k] = v
		}
		return nil
	}
	b := f.data[f.offs[i]:f.offs[i+1]]
	if f.jsonl {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for k, v := range m {
			vars[k] = jsonText(v)
		}
		return nil
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = len(f.columns)
	rec, err := r.Read()
	if err != nil {
		return err
	}
	for k, c := range f.columns {
		vars[c] = rec[k]
	}
	return nil
}

func (f *feed) close() error {
	if f.unmap != nil {
		return f.unmap()
	}
	return nil
}

// loadFeeds decodes and loads the web block's feeds; every problem (a
// missing file, a malformed row with its line) is an error positioned at
// the feed's key.
func loadFeeds(block scenario.Node) ([]*feed, []error) {
	list, ok := block.Get("feeds")
	if !ok {
		return nil, nil
	}
	var nodes []scenario.Node
	errs := list.Decode(&nodes)
	var out []*feed
	names := map[string]bool{}
	columns := map[string]string{}
	for i, n := range nodes {
		var s feedSpec
		if es := n.Decode(&s); len(es) > 0 {
			errs = append(errs, es...)
			continue
		}
		if s.Name == "" {
			s.Name = fmt.Sprintf("feed%d", i+1)
		}
		if names[s.Name] {
			errs = append(errs, n.Errorf("name", "feed name %q is given twice", s.Name))
		}
		names[s.Name] = true
		if s.Order == "" {
			s.Order = OrderPerUser
		}
		switch s.Order {
		case OrderPerUser, OrderUnique, OrderRoundRobin, OrderRandom:
		default:
			errs = append(errs, n.Errorf("order", "order %q is not per_user, unique, round_robin or random", s.Order))
			continue
		}
		f := &feed{name: s.Name, order: s.Order, reuse: s.Reuse, file: s.File, node: n}
		switch {
		case (s.File == "") == (s.Rows == nil):
			errs = append(errs, n.Errorf("", "feed %s: give a file or rows", s.Name))
			continue
		case s.Rows != nil:
			f.rows = s.Rows
			seen := map[string]bool{}
			for _, r := range s.Rows {
				for k := range r {
					if !seen[k] {
						seen[k] = true
						f.columns = append(f.columns, k)
					}
				}
			}
			sort.Strings(f.columns)
			for j, r := range s.Rows {
				if len(r) != len(f.columns) {
					errs = append(errs, n.Errorf("rows", "feed %s: row %d has %d columns of the %d (%s)", s.Name, j+1, len(r), len(f.columns), strings.Join(f.columns, ", ")))
				}
			}
		default:
			path := s.File
			if !filepath.IsAbs(path) && n.Dir() != "" {
				path = filepath.Join(n.Dir(), path)
			}
			if err := f.load(path); err != nil {
				errs = append(errs, n.Errorf("file", "feed %s: %v", s.Name, err))
				continue
			}
		}
		if f.size() == 0 {
			errs = append(errs, n.Errorf("", "feed %s has no rows", s.Name))
		}
		for _, c := range f.columns {
			if !validName(c) {
				errs = append(errs, n.Errorf("", "feed %s: column %q cannot be read as {{ .%s }}: letters, digits and _, starting with a letter", s.Name, c, c))
			} else if contains(builtinVars, c) {
				errs = append(errs, n.Errorf("", "feed %s: column %q is a built-in variable's name", s.Name, c))
			} else if other, dup := columns[c]; dup {
				errs = append(errs, n.Errorf("", "feed %s: column %q is also feed %s's", s.Name, c, other))
			}
			columns[c] = s.Name
		}
		out = append(out, f)
	}
	if len(errs) > 0 {
		for _, f := range out {
			f.close()
		}
		return nil, errs
	}
	return out, nil
}

// load maps a file and indexes its rows, checking each: a CSV row with
// the wrong number of fields, or a JSON line that is not an object of
// values, is an error naming its line.
func (f *feed) load(path string) error {
	fh, fi, err := regfile.Open(path)
	if err != nil {
		var nr *regfile.NotRegularError
		if errors.As(err, &nr) {
			return fmt.Errorf("%s is %v", path, err)
		}
		return fmt.Errorf("%s: %v", f.file, err) // "no such file or directory", said with the path as given
	}
	defer fh.Close()
	data, unmap, err := mapFile(fh, fi.Size())
	if err != nil {
		return err
	}
	f.data, f.unmap = data, unmap
	ext := strings.ToLower(filepath.Ext(path))
	f.jsonl = ext == ".jsonl" || ext == ".ndjson"
	if f.jsonl {
		err = f.indexJSONL(path)
	} else {
		err = f.indexCSV(path)
	}
	if err != nil {
		f.close()
		f.data, f.unmap = nil, nil
	}
	return err
}

func (f *feed) indexCSV(path string) error {
	r := csv.NewReader(bytes.NewReader(f.data))
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s is empty: a CSV feed starts with a row naming its columns", path)
	}
	if err != nil {
		return csvError(path, err)
	}
	f.columns = append([]string(nil), head...)
	for {
		off := r.InputOffset()
		_, err := r.Read()
		if err == io.EOF {
			f.offs = append(f.offs, uint64(off))
			return nil
		}
		if err != nil {
			return csvError(path, err)
		}
		f.offs = append(f.offs, uint64(off))
	}
}

// csvError says where a CSV file is malformed: file:line.
func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("%s:%d: a row with the wrong number of fields (the first row names the columns)", path, pe.StartLine)
		}
		return fmt.Errorf("%s:%d:%d: %v", path, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func (f *feed) indexJSONL(path string) error {
	seen := map[string]bool{}
	line, off := 0, 0
	for off < len(f.data) {
		end := bytes.IndexByte(f.data[off:], '\n')
		if end < 0 {
			end = len(f.data) - off
		}
		b := f.data[off : off+end]
		line++
		if len(bytes.TrimSpace(b)) > 0 {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m == nil {
				return fmt.Errorf("%s:%d: not a JSON object on one line", path, line)
			}
			for k, v := range m {
				switch v.(type) {
				case map[string]any, []any:
					return fmt.Errorf("%s:%d: %q is not a single value", path, line, k)
				}
				if len(f.offs) == 0 {
					seen[k] = true
					f.columns = append(f.columns, k)
				} else if !seen[k] {
					return fmt.Errorf("%s:%d: key %q is not in the first line", path, line, k)
				}
			}
			if len(m) != len(f.columns) {
				return fmt.Errorf("%s:%d: %d keys, the first line has %d", path, line, len(m), len(f.columns))
			}
			f.offs = append(f.offs, uint64(off))
		}
		off += end + 1
	}
	sort.Strings(f.columns)
	f.offs = append(f.offs, uint64(len(f.data)))
	if len(f.offs) > 1 {
		// Rows end where the next begins: blank lines between are inside.
		return nil
	}
	return nil
}

// checkSize refuses, before the run, a feed shorter than the plan needs:
// per_user needs a row per user, unique one per iteration of every user
// (known when the users' iterations are counted); reuse allows it.
func (f *feed) checkSize(users, iterations int) error {
	if f.reuse || f.order == OrderRandom || f.order == OrderRoundRobin {
		return nil
	}
	need, what := users, fmt.Sprintf("one per user (%d users)", users)
	if f.order == OrderUnique {
		// Each user's first iteration takes row user, whatever the model;
		// with iterations counted, every iteration's row is known. When
		// they are not (a run bounded by time, the open model), a user
		// left without a row later fails that iteration.
		need, what = users, fmt.Sprintf("one per user's first iteration (%d users)", users)
		if iterations > 0 {
			need, what = users*iterations, fmt.Sprintf("one per iteration (%d users x %d iterations)", users, iterations)
		}
	}
	if f.size() < need {
		return f.node.Errorf("", "feed %s has %d rows, the plan needs %d, %s: give a longer file, or reuse: true to share rows", f.name, f.size(), need, what)
	}
	return nil
}
