package pubsub

import (
	"bufio"
	"fmt"
	"os"
	"sort"
)

// accountRow is one subscriber's accounting of one stream.
type accountRow struct {
	user int
	key  streamKey
	tally
}

// writeAccounting writes the per-subscriber accounting (accounting_file)
// as CSV, sorted by subscriber and stream: one line per subscriber and
// stream it was owed (the stream is publisher.subject), so a loss can be
// traced to the subscribers and the publishers it hit; missed is the part
// of lost owed while the subscriber was disconnected.
func (r *run) writeAccounting(rows []accountRow) error {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].user != rows[j].user {
			return rows[i].user < rows[j].user
		}
		return rows[i].key < rows[j].key
	})
	f, err := os.Create(r.c.AccountingFile)
	if err != nil {
		return fmt.Errorf("pubsub: accounting file: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "subscriber,stream,publisher,subject,expected,received,lost,duplicate,out_of_order,early,missed")
	for _, row := range rows {
		pub, subject := row.key.user(), row.key.subject()
		fmt.Fprintf(w, "%d,%d.%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", row.user, pub, subject, pub, subject,
			row.Expected, row.Received, row.Lost, row.Duplicate, row.OutOfOrder, row.Early, row.Missed)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("pubsub: accounting file: %w", err)
	}
	return f.Close()
}
