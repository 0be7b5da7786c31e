// Command soak runs throng for a long time at a modest rate and prints its
// memory at the start, after a warm-up and at the end: a run's memory must
// not grow with its length (issue 18). Intervals are handed to the journal
// and folded into the summaries as they come; none is kept.
//
//	go run ./bench/soak                                # 30 minutes, 1 s intervals, 100/s
//	go run ./bench/soak -duration 5m -interval 100ms   # shorter; as many intervals per minute as 10x longer
//
// throng runs in this process exactly as `throng run` does (internal/cli),
// against its embedded web server, two actions (one a 404) at an aggregate
// rate, with the machine's counters read every interval. Every -every it
// samples the process's resident set (/proc/self/statm) and its live heap
// after a forced collection. It prints both at the start, after -warmup
// (the baseline) and at the end, and fails (exit 1) when the resident set
// grew by more than -max-growth from the baseline to the end. The same
// code runs in CI as a short test (soak_test.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	c := config{}
	flag.DurationVar(&c.Duration, "duration", 30*time.Minute, "length of the steady state")
	flag.DurationVar(&c.Interval, "interval", time.Second, "recording interval")
	flag.StringVar(&c.Rate, "rate", "100/s", "aggregate arrival rate")
	flag.DurationVar(&c.Warmup, "warmup", 2*time.Minute, "the baseline is the first sample after it")
	flag.DurationVar(&c.Every, "every", 10*time.Second, "sampling period")
	maxGrowth := flag.Float64("max-growth", 5, "resident set growth allowed from the baseline to the end, MB")
	verbose := flag.Bool("v", false, "print every sample")
	flag.Parse()
	dir, err := os.MkdirTemp("", "soak-")
	check(err)
	defer os.RemoveAll(dir)
	c.Dir = dir
	fmt.Printf("soak: %s steady, %s intervals, %s, two actions, against the embedded web server (in this process)\n",
		c.Duration, c.Interval, c.Rate)
	o, err := soak(c)
	if o != nil && *verbose {
		for _, s := range o.Samples {
			fmt.Printf("  %8s  RSS %s  live heap %s\n", s.At.Round(time.Second), mb(s.RSS), mb(s.Heap))
		}
	}
	check(err)
	fmt.Printf("actions %d, intervals after the baseline %d\n", o.Actions, o.Intervals)
	fmt.Printf("RSS:       start %s (at %s), baseline %s (at %s), end %s (at %s): growth %+.2f MB from the baseline\n",
		mb(o.Start.RSS), o.Start.At.Round(time.Second), mb(o.Base.RSS), o.Base.At.Round(time.Second),
		mb(o.End.RSS), o.End.At.Round(time.Second), float64(o.RSSGrowth())/1e6)
	fmt.Printf("live heap: start %s, baseline %s, end %s: %+.0f bytes per interval\n",
		mb(o.Start.Heap), mb(o.Base.Heap), mb(o.End.Heap), o.HeapPerInterval())
	if g := float64(o.RSSGrowth()) / 1e6; g > *maxGrowth {
		fmt.Printf("FAIL: the resident set grew %.2f MB, more than %.0f MB\n", g, *maxGrowth)
		os.Exit(1)
	}
	fmt.Printf("ok: growth within %.0f MB\n", *maxGrowth)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}
