package runner

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/throng-io/throng/internal/result"
)

// Describe says, in words that are true, where a run's result and journal
// went; the error is set when the result is not where it was asked for
// (written elsewhere, or nowhere).
func (rec *Record) Describe() (string, error) {
	if rec == nil {
		return "", nil
	}
	var b strings.Builder
	var err error
	switch rec.Result {
	case rec.Out:
		fmt.Fprintf(&b, "Result: %s", rec.Out)
	case "":
		fmt.Fprintf(&b, "No result file: it could not be written (%v). The summary above was made from memory.", rec.ResultErr)
		err = fmt.Errorf("the result could not be written anywhere: %v", rec.ResultErr)
	default:
		fmt.Fprintf(&b, "Result: %s — written there because %s could not be written (%v)", rec.Result, rec.Out, rec.ResultErr)
		err = fmt.Errorf("the result could not be written to %s (%v); it was written to %s", rec.Out, rec.ResultErr, rec.Result)
	}
	st := rec.JournalState
	switch {
	case rec.JournalErr == nil && st.Complete() && rec.Result != "":
		fmt.Fprintf(&b, " (journal %s)", rec.Journal)
	case rec.JournalErr == nil && st.Complete():
		fmt.Fprintf(&b, "\nThe journal %s holds the whole run (%d intervals): `throng report %s` reads it.", rec.Journal, st.Intervals, rec.Journal)
	default:
		fmt.Fprintf(&b, "\nThe journal %s is incomplete: its file holds %d of the run's %d intervals", rec.Journal, st.InFile, st.Intervals)
		if st.Err != nil {
			fmt.Fprintf(&b, " (%v)", st.Err)
		} else if rec.JournalErr != nil {
			fmt.Fprintf(&b, " (%v)", rec.JournalErr)
		}
		if rec.Result != "" {
			fmt.Fprintf(&b, "; the result file holds %s.", heldByResult(st))
		} else {
			b.WriteString("; the rest was lost when throng ended.")
		}
	}
	if st.MovedFrom != "" {
		fmt.Fprintf(&b, "\nThe journal moved to %s: %s refused records (%v) and the memory that keeps them was full.", rec.Journal, st.MovedFrom, st.FirstErr)
		err = errors.Join(err, fmt.Errorf("the journal could not be written to %s (%v); it was moved to %s", st.MovedFrom, st.FirstErr, rec.Journal))
	}
	return b.String(), err
}

// heldByResult says which intervals a result written from a journal holds.
func heldByResult(st result.JournalState) string {
	lost := 0
	for _, l := range st.Lost {
		lost += l.N
	}
	if lost == 0 {
		return "every interval"
	}
	return fmt.Sprintf("%d of them (%d could not be kept in memory either; the summaries count them)", st.Intervals-lost, lost)
}

// FileName turns a scenario name into one file name component: letters,
// digits, '.', '_' and '-' are kept, any other run of characters (path
// separators, spaces, control characters) becomes one '-', leading dots
// and dashes are dropped (no hidden file, no "..", no option-like name),
// and the result is cut at 64 bytes; "run" when nothing is left. So
// "name: ../../x" writes results/x-TIME.json, never outside results/.
func FileName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-' {
			if b.Len()+utf8.RuneLen(r) > 64 {
				break
			}
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(strings.TrimLeft(b.String(), ".-"), "-")
	if out == "" {
		return "run"
	}
	return out
}
