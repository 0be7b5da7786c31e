package mail

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/regfile"
	"github.com/throng-io/throng/internal/scenario"
)

// rawList is a list as written: its members may be lists themselves.
type rawList struct {
	addr    string
	members []string
}

// normAddr makes an address of a list or member as written: a bare name
// is in the users' domain; the domain is compared in lower case.
func normAddr(s, domain string) (string, error) {
	s = strings.TrimSpace(s)
	local, dom, ok := strings.Cut(s, "@")
	if !ok {
		local, dom = s, domain
	}
	if local == "" || dom == "" || strings.ContainsAny(s, " \t<>\",;()[]\\") || strings.Contains(dom, "@") {
		return "", fmt.Errorf("%q is not an address (want local@domain, or a name in the users' domain)", s)
	}
	return local + "@" + strings.ToLower(dom), nil
}

// addrKey is how addresses are compared: case-insensitively.
func addrKey(a string) string { return strings.ToLower(a) }

// listBuilder gathers described lists as they are read, in the order
// first named, with the rules both forms share: addresses, a member once
// per list, the bounds.
type listBuilder struct {
	domain  string
	out     []rawList
	index   map[string]int    // addrKey -> list
	members []map[string]bool // per list: addrKey of its members
	total   int
}

func newListBuilder(domain string) *listBuilder {
	return &listBuilder{domain: domain, index: map[string]int{}}
}

// list returns the index of the list written addr, added when new; known
// says it was named before.
func (b *listBuilder) list(addr string) (k int, known bool, err error) {
	a, err := normAddr(addr, b.domain)
	if err != nil {
		return 0, false, fmt.Errorf("list: %w", err)
	}
	if k, ok := b.index[addrKey(a)]; ok {
		return k, true, nil
	}
	if len(b.out) >= maxLists {
		return 0, false, fmt.Errorf("more than %d lists", maxLists)
	}
	b.index[addrKey(a)] = len(b.out)
	b.out = append(b.out, rawList{addr: a})
	b.members = append(b.members, map[string]bool{})
	return len(b.out) - 1, false, nil
}

// member adds the member written m to list k.
func (b *listBuilder) member(k int, m string) error {
	if strings.TrimSpace(m) == "" {
		return errors.New("an empty member")
	}
	a, err := normAddr(m, b.domain)
	switch {
	case err != nil:
		return fmt.Errorf("member: %w", err)
	case b.members[k][addrKey(a)]:
		return fmt.Errorf("%s is already a member of %s", strings.TrimSpace(m), b.out[k].addr)
	case b.total >= maxListMembers:
		return fmt.Errorf("more than %d members", maxListMembers)
	}
	b.total++
	b.members[k][addrKey(a)] = true
	b.out[k].members = append(b.out[k].members, a)
	return nil
}

// readListsFile reads lists from a CSV file (parseListsCSV). The file is
// opened through regfile: a FIFO, a device (/dev/zero) or a directory is
// refused at once, never waited on or read without end.
func readListsFile(path, domain string) ([]rawList, []error) {
	f, fi, err := regfile.Open(path)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", path, err)}
	}
	defer f.Close()
	if fi.Size() > maxListsFile {
		return nil, []error{fmt.Errorf("%s: %w", path, &regfile.TooLargeError{Size: fi.Size(), Max: maxListsFile})}
	}
	return parseListsCSV(path, f, domain)
}

// parseListsCSV reads lists as CSV: a row is LIST,MEMBER[,MEMBER...]; a
// list may take several rows; blank lines, lines starting with # and a
// first row "list,..." are skipped. Errors (the first 20) name the file,
// the line and the column.
func parseListsCSV(name string, r io.Reader, domain string) ([]rawList, []error) {
	cr := csv.NewReader(io.LimitReader(r, maxListsFile+1))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	b := newListBuilder(domain)
	var errs []error
	bad := func(field int, err error) {
		if len(errs) < 20 {
			line, col := cr.FieldPos(field)
			errs = append(errs, fmt.Errorf("%s:%d:%d: %v", name, line, col, err))
		}
	}
	for first := true; ; first = false {
		rec, err := cr.Read()
		var pe *csv.ParseError
		switch {
		case errors.Is(err, io.EOF):
			return b.out, errs
		case errors.As(err, &pe):
			return nil, append(errs, fmt.Errorf("%s:%d:%d: %v", name, pe.Line, pe.Column, pe.Err))
		case err != nil:
			return nil, append(errs, fmt.Errorf("%s: %v", name, err))
		case cr.InputOffset() > maxListsFile:
			return nil, append(errs, fmt.Errorf("%s: larger than %d MB", name, maxListsFile>>20))
		case first && strings.EqualFold(strings.TrimSpace(rec[0]), "list"):
			continue // a header row
		case len(rec) < 2:
			bad(0, errors.New("want LIST,MEMBER[,MEMBER...], got one field"))
			continue
		}
		k, _, err := b.list(rec[0])
		if err != nil {
			bad(0, err)
			continue
		}
		for i, m := range rec[1:] {
			if err := b.member(k, m); err != nil {
				bad(i+1, err)
			}
		}
	}
}

// decodeMembers reads inline lists (address -> members), in the order of
// their addresses; errors are positioned at the list's key.
func decodeMembers(n scenario.Node, domain string) ([]rawList, []error) {
	var m map[string][]string
	if errs := n.Decode(&m); len(errs) > 0 {
		return nil, errs
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := newListBuilder(domain)
	var errs []error
	for _, key := range keys {
		k, known, err := b.list(key)
		switch {
		case err != nil:
			errs = append(errs, n.Errorf(key, "%v", err))
			continue
		case known:
			errs = append(errs, n.Errorf(key, "list %s is given twice", b.out[k].addr))
			continue
		case len(m[key]) == 0:
			errs = append(errs, n.Errorf(key, "list %s has no member", b.out[k].addr))
		}
		for _, a := range m[key] {
			if err := b.member(k, a); err != nil {
				errs = append(errs, n.Errorf(key, "%v", err))
			}
		}
	}
	return b.out, errs
}

// expandLists replaces members that are lists by their members (as the
// MTA expands nested aliases), keeping each address once; a list that
// contains itself, directly or not, is an error.
func expandLists(raw []rawList) ([]listDef, error) {
	index := make(map[string]int, len(raw))
	for i, l := range raw {
		index[addrKey(l.addr)] = i
	}
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(raw))
	flat := make([][]string, len(raw))
	total := 0
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case done:
			return nil
		case active:
			return fmt.Errorf("list %s contains itself (%s)", raw[i].addr, strings.Join(append(path, raw[i].addr), " → "))
		}
		state[i] = active
		seen := map[string]bool{}
		var out []string
		for _, m := range raw[i].members {
			j, isList := index[addrKey(m)]
			if !isList {
				if !seen[addrKey(m)] {
					seen[addrKey(m)] = true
					out = append(out, m)
				}
				continue
			}
			if err := visit(j, append(path, raw[i].addr)); err != nil {
				return err
			}
			for _, n := range flat[j] {
				if !seen[addrKey(n)] {
					seen[addrKey(n)] = true
					out = append(out, n)
				}
			}
		}
		if total += len(out); total > maxListMembers {
			return fmt.Errorf("the lists expand to more than %d members", maxListMembers)
		}
		flat[i], state[i] = out, done
		return nil
	}
	defs := make([]listDef, len(raw))
	for i := range raw {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
		defs[i] = listDef{addr: raw[i].addr, members: flat[i]}
	}
	return defs, nil
}
