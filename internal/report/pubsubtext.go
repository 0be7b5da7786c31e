package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/textfmt"
)

// pubsubDelivery is a repetition's pub/sub accounting, from the driver's
// events over the whole repetition: what the subscribers were owed and
// what became of it (delivered, lost while connected, missed while
// disconnected by a broken connection), the outages, the cut-offs, and
// the publishes asked of the publishers against those done.
type pubsubDelivery struct {
	delivered, lost, missed, foreign, other uint64
	dup, outOfOrder                         uint64
	outages, slow, connectErrs              uint64
	outageMaxMs                             float64
	asked, done, failed, dropped            uint64
	samples                                 []string // "missed: ...", one per kind that has one
}

// pubsubDeliveryOf reads the accounting; false when the run is not a
// pub/sub run that tracked deliveries.
func pubsubDeliveryOf(run *result.Run, rep *result.Repetition) (pubsubDelivery, bool) {
	var d pubsubDelivery
	if !slices.Contains(run.Meta.Events, "missed") || !slices.Contains(run.Meta.Events, "deliver") || len(rep.Summaries) == 0 {
		return d, false
	}
	publish := strings.Split(run.Meta.Settings["publish_actions"], ",")
	all := &rep.Summaries[len(rep.Summaries)-1]
	users := len(run.Meta.Actions) - len(run.Meta.Events)
	for i := range all.Actions {
		a := &all.Actions[i]
		if i < users {
			if slices.Contains(publish, a.Name) {
				d.asked += a.Count + a.Dropped
				d.done += a.OK
				d.failed += a.Errors
				d.dropped += a.Dropped
			}
			continue
		}
		sample := func(kind, class string) {
			if m := a.Messages[class]; m != "" {
				d.samples = append(d.samples, kind+": "+m)
			}
		}
		switch a.Name {
		case "deliver":
			d.delivered, d.lost = a.OK, a.ErrorsByClass["lost"]
			d.foreign, d.other = a.ErrorsByClass["corrupt"], a.ErrorsByClass["other"]
			sample("lost while connected", "lost")
			sample("foreign", "corrupt")
			sample("not accounted", "other")
		case "missed":
			d.missed = a.ErrorsByClass["lost"]
			sample("missed while disconnected", "lost")
		case "duplicate":
			d.dup = a.Count
		case "out_of_order":
			d.outOfOrder = a.Count
		case "outage":
			d.outages, d.outageMaxMs = a.Count, a.Latency.MaxMs
		case "slow_consumer":
			d.slow = a.Count
		case "connect":
			d.connectErrs = a.Errors
		}
	}
	return d, true
}

// pubsubSection prints the pub/sub accounting of each repetition: the
// deliveries owed and what became of them, the outages that cost some,
// the publishes asked and done, and a sample of each kind of loss.
func pubsubSection(w *errWriter, run *result.Run) {
	var shown []pubsubDelivery
	var runs []int
	for i := range run.Repetitions {
		if d, ok := pubsubDeliveryOf(run, &run.Repetitions[i]); ok {
			shown, runs = append(shown, d), append(runs, i+1)
		}
	}
	if len(shown) == 0 {
		return
	}
	n := func(v uint64) string { return textfmt.Num(float64(v)) }
	w.printf("\nPub/sub delivery (every subscriber, every stream of the plan; whole run):\n")
	for k, d := range shown {
		label := "  "
		if len(run.Repetitions) > 1 {
			label = fmt.Sprintf("  run %d: ", runs[k])
		}
		w.printf("%sdelivered %s, lost while connected %s, missed while disconnected %s (loss %s); duplicates %s, out of order %s\n",
			label, n(d.delivered), n(d.lost), n(d.missed), n(d.lost+d.missed), n(d.dup), n(d.outOfOrder))
		w.printf("%soutages %s", strings.Repeat(" ", len(label)), n(d.outages))
		if d.outages > 0 {
			w.printf(" (longest %s)", textfmt.Ms(d.outageMaxMs))
		}
		w.printf(", connection failures and breaks %s, slow-consumer cut-offs %s\n", n(d.connectErrs), n(d.slow))
		w.printf("%spublishes asked %s, done %s (failed %s, dropped %s)\n", strings.Repeat(" ", len(label)),
			n(d.asked), n(d.done), n(d.failed), n(d.dropped))
		if d.foreign > 0 || d.other > 0 {
			w.printf("%smessages not of this run %s, deliveries not accounted %s\n", strings.Repeat(" ", len(label)), n(d.foreign), n(d.other))
		}
	}
	var all []string
	for _, d := range shown {
		all = append(all, d.samples...)
	}
	for _, s := range onePerKind(all) {
		w.printf("  %s\n", s)
	}
}
