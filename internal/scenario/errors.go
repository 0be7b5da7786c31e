package scenario

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a scenario file, 1-based. A zero Pos means "no
// position known" (a key that is absent from the file).
type Pos struct {
	Line, Col int
}

// Error is one problem in a scenario file: where it is and why.
// Its text has the form "file:line:col: path: message".
type Error struct {
	File string
	Pos  Pos
	Path string // dotted key path, like "phases.steady.duration" or "actions[0].rate"
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Pos.Line, e.Pos.Col)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is a list of problems found in one scenario file, in file order.
// It is returned as a single error by Load and Parse.
type Errors []error

// MaxMessages bounds the messages an Errors prints: past them, one line
// says how many more there are.
const MaxMessages = 20

func (es Errors) Error() string {
	n := min(len(es), MaxMessages)
	msgs := make([]string, n, n+1)
	for i, e := range es[:n] {
		msgs[i] = e.Error()
	}
	if len(es) > n {
		msgs = append(msgs, fmt.Sprintf("(and %d more problems: fix these first)", len(es)-n))
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find an *Error inside.
func (es Errors) Unwrap() []error { return es }

// SortErrors orders positioned errors by line and column, so messages read in
// file order; errors without a position keep their order at the end.
func SortErrors(es []error) {
	sort.SliceStable(es, func(i, j int) bool {
		var a, b *Error
		if !errors.As(es[i], &a) || !errors.As(es[j], &b) {
			return false
		}
		if a.Pos.Line == 0 || b.Pos.Line == 0 {
			return a.Pos.Line != 0 && b.Pos.Line == 0
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
}

// suggest returns the known name closest to s, or "" when none is close.
func suggest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(s, k); d < bestD || (d == bestD && best == "") && d < 3 {
			best, bestD = k, d
		}
	}
	if bestD > len(s)/2+1 {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
