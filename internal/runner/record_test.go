package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

// A journal that moved to the temporary directory (its disk full, its
// memory full) is named where it is, with where it was and why; like a
// result written elsewhere, it is an error (exit 4), and the journal is
// not said to be incomplete when the moved file holds it all.
func TestDescribeMovedJournal(t *testing.T) {
	full := errors.New("write /full/r.journal.jsonl: no space left on device")
	rec := &Record{Out: "/full/r.json", Result: "/tmp/r.json", ResultErr: errors.New("/full/r.json: no space left on device"),
		Journal: "/tmp/r.journal.jsonl",
		JournalState: result.JournalState{Intervals: 300, InFile: 300, FirstErr: full,
			MovedFrom: "/full/r.journal.jsonl", Path: "/tmp/r.journal.jsonl"}}
	where, err := rec.Describe()
	for _, want := range []string{
		"Result: /tmp/r.json — written there because /full/r.json could not be written",
		"(journal /tmp/r.journal.jsonl)",
		"\nThe journal moved to /tmp/r.journal.jsonl: /full/r.journal.jsonl refused records (" + full.Error() + ") and the memory that keeps them was full.",
	} {
		if !strings.Contains(where, want) {
			t.Errorf("%q lacks %q", where, want)
		}
	}
	if strings.Contains(where, "incomplete") {
		t.Errorf("says incomplete: %s", where)
	}
	if err == nil || !strings.Contains(err.Error(), "it was moved to /tmp/r.journal.jsonl") {
		t.Errorf("error %v", err)
	}
}
