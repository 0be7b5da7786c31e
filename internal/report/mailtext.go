package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/throng-io/throng/internal/result"
)

// mailDelivery is a repetition's mail delivery accounting, from the
// driver's events over the whole repetition: deliveries owed (one per
// recipient), seen and lost; copies misdelivered and duplicated.
type mailDelivery struct {
	owed, seen, timed, lost, errs uint64
	misdelivered, duplicated      uint64
	samples                       []string // "lost: ...", one per class that has one
}

// mailDeliveryOf reads the accounting; false when the run is not a mail
// run that tracked deliveries.
func mailDeliveryOf(run *result.Run, rep *result.Repetition) (mailDelivery, bool) {
	var d mailDelivery
	if run.Meta.Driver != "mail" || !slices.Contains(run.Meta.Events, "deliver") || len(rep.Summaries) == 0 {
		return d, false
	}
	all := &rep.Summaries[len(rep.Summaries)-1]
	for i := range all.Actions {
		a := &all.Actions[i]
		if i < len(run.Meta.Actions)-len(run.Meta.Events) {
			continue // the users' actions
		}
		switch a.Name {
		case "deliver":
			d.owed, d.timed, d.lost = a.Count, a.Timed(), a.ErrorsByClass["lost"]
			d.errs = a.Errors - d.lost
			d.seen = a.Count - a.Errors
		case "misdeliver":
			d.misdelivered = a.ErrorsByClass["misdelivered"]
		case "duplicate":
			d.duplicated = a.ErrorsByClass["duplicate"]
		}
		for _, c := range []string{"lost", "misdelivered", "duplicate"} {
			if m := a.Messages[c]; m != "" {
				d.samples = append(d.samples, c+": "+m)
			}
		}
	}
	return d, d.owed+d.misdelivered+d.duplicated > 0
}

// mailSection prints the mail delivery accounting of each repetition:
// per recipient, what was owed, delivered and lost, the copies
// misdelivered and duplicated, a sample of each, and in words what the
// run could not account for (lists that may differ from the server's,
// list members outside the run).
func mailSection(w *errWriter, run *result.Run) {
	var shown []mailDelivery
	var runs []int
	for i := range run.Repetitions {
		if d, ok := mailDeliveryOf(run, &run.Repetitions[i]); ok {
			shown, runs = append(shown, d), append(runs, i+1)
		}
	}
	if len(shown) == 0 {
		return
	}
	w.printf("\nMail delivery (one per recipient, lists expanded; whole run):\n")
	for k, d := range shown {
		label := "  "
		if len(run.Repetitions) > 1 {
			label = fmt.Sprintf("  run %d: ", runs[k])
		}
		w.printf("%sowed %s: delivered %s (%s timed, %s found at a log-on or after the load), lost %s",
			label, num(float64(d.owed)), num(float64(d.seen)), num(float64(d.timed)), num(float64(d.seen-min(d.seen, d.timed))), num(float64(d.lost)))
		if d.errs > 0 {
			w.printf(", %s other errors", num(float64(d.errs)))
		}
		w.printf("; misdelivered %s, duplicated %s\n", num(float64(d.misdelivered)), num(float64(d.duplicated)))
	}
	var all []string
	for _, d := range shown {
		all = append(all, d.samples...)
	}
	for _, s := range onePerKind(all) {
		w.printf("  %s\n", s)
	}
	var lost, mis uint64
	for _, d := range shown {
		lost, mis = lost+d.lost, mis+d.misdelivered
	}
	for _, note := range mailNotes(run, lost, mis) {
		w.printf("  Note: %s\n", note)
	}
}

// mailNotes says in words what the run could not account for.
func mailNotes(run *result.Run, lost, misdelivered uint64) []string {
	set := run.Meta.Settings
	var notes []string
	if lists := set["lists"]; lost+misdelivered > 0 && lists != "" && lists != "none" {
		notes = append(notes, "if the server's lists differ from the run's ("+lists+"), each difference counts once lost, "+
			"and once misdelivered when it lands in a user of the run: describe the server's lists in mail.lists (file or members).")
	}
	if f := set["lists_foreign_members"]; f != "" {
		notes = append(notes, "the lists name "+f+" members that are not this run's users (another domain or name): their mail is not tracked, neither delivered nor lost.")
	}
	if n, err := strconv.Atoi(set["lists_users_named"]); err == nil && n > run.Meta.Users {
		notes = append(notes, fmt.Sprintf("the lists name users up to the %s, and this run has %s: mail to the others is not tracked.",
			ordinal(n), num(float64(run.Meta.Users))))
	}
	return notes
}

// ordinal writes 1st, 2nd, 3rd, 4th, ... 11th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return num(float64(n)) + suffix
}
