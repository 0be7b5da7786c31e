package capacity

import (
	"fmt"
	"math"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// A loss SLO (loss == 0) is a count taken after the run's drain: a server
// whose delivery backlog grows through a step still delivers it all if the
// drain outlasts the backlog, so the step passes, and a longer run at that
// load loses messages (the bench found 590 mail users on loss == 0 alone,
// and 531 of them for 60 s lost 55 % of their deliveries). So a step
// judged on loss is also judged on the trend of its deliveries' latency:
// a queue that keeps growing is a load not sustained, whatever was lost
// in the step.
//
// The figure is the mean latency of the deliver event over sections of
// the measured phase. It counts as a growing backlog when its slope is
// significant (Trend), its change over the step exceeds the sections'
// half-width, and the change is at least backlogGrowth of the mean: a
// delivery latency that ends half again above where it stood on average.
const backlogGrowth = 0.5

// deliverMean is the figure whose trend shows a backlog.
var deliverMean = mustThreshold("deliver.mean < 24h")

func mustThreshold(s string) threshold.Threshold {
	t, err := threshold.Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

// judgesLoss reports whether an SLO counts lost deliveries.
func judgesLoss(slos []threshold.Threshold) bool {
	for _, t := range slos {
		if t.Metric == "loss" {
			return true
		}
	}
	return false
}

// growingBacklog says, for a step judged on loss, whether its deliveries'
// latency rose through the phase's intervals ivs the way a growing queue
// does, and how (first and last section's figure); false when the run has
// no deliveries or too few intervals to tell.
func growingBacklog(run *result.Run, ivs []result.Interval) (from, to float64, growing bool) {
	var vals []float64
	for _, sr := range sectionRuns(run, ivs) {
		vals = append(vals, worstValue(deliverMean, deliverMean.Evaluate(sr)))
	}
	if len(vals) == 0 {
		return 0, 0, false
	}
	slope, sig := Trend(vals)
	if !sig || slope <= 0 {
		return 0, 0, false
	}
	n, sum := 0, 0.0
	for _, v := range vals {
		if !math.IsNaN(v) {
			n, sum = n+1, sum+v
		}
	}
	change := slope * float64(len(vals)-1)
	if n == 0 || change <= SectionHalfWidth(vals) || change < backlogGrowth*sum/float64(n) {
		return 0, 0, false
	}
	return vals[0], vals[len(vals)-1], true
}

// backlogWhy is the invalid step's reason.
func backlogWhy(from, to float64) string {
	return fmt.Sprintf("the deliveries' mean latency went from %s to %s ms over the step: a backlog is growing, and a longer run at this load would lose deliveries", num(from), num(to))
}
