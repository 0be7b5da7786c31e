package main

import (
	"testing"
	"time"
)

// The soak, short: 20 intervals a second for a minute, so that an interval
// list kept in memory shows (throng kept one before: 12 KB of live heap and
// as much resident set per interval, with the machine's counters). The live
// heap after a collection may grow a little while the histograms and
// counter maps of the summaries fill (a few hundred bytes per interval here,
// less and less); the resident set must stay within the 5 MB the 30-minute
// soak allows.
func TestSoakMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load; not in -short")
	}
	o, err := soak(config{Duration: 60 * time.Second, Interval: 50 * time.Millisecond, Rate: "100/s",
		Warmup: 15 * time.Second, Every: 3 * time.Second, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range o.Samples {
		t.Logf("%6s  RSS %s  live heap %s", s.At.Round(time.Second), mb(s.RSS), mb(s.Heap))
	}
	t.Logf("%d actions, %d intervals after the baseline; RSS %+.2f MB, live heap %+.0f bytes per interval",
		o.Actions, o.Intervals, float64(o.RSSGrowth())/1e6, o.HeapPerInterval())
	if o.Intervals < 500 || o.Actions < 1000 {
		t.Fatalf("%d intervals, %d actions: the soak did not run", o.Intervals, o.Actions)
	}
	if h := o.HeapPerInterval(); h > 1024 {
		t.Errorf("the live heap grew %.0f bytes per interval (from %s to %s over %d intervals): the run keeps something per interval",
			h, mb(o.Base.Heap), mb(o.End.Heap), o.Intervals)
	}
	if g := o.RSSGrowth(); g > 5e6 {
		t.Errorf("the resident set grew %.2f MB (from %s to %s)", float64(g)/1e6, mb(o.Base.RSS), mb(o.End.RSS))
	}
}
