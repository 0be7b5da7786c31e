package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/cli"
)

// config is one soak.
type config struct {
	Duration time.Duration // steady state
	Interval time.Duration // recording interval
	Rate     string        // open model's aggregate rate, like 100/s
	Warmup   time.Duration // the baseline is taken after it
	Every    time.Duration // sampling period
	Dir      string        // where the result and the journal go
}

// scenario is two actions (one a 404, so errors are recorded too) at an
// aggregate rate against the embedded web server, with the machine's
// counters read every interval (the default): the shape of a long test.
func (c config) scenario() string {
	return fmt.Sprintf(`name: soak
target: embedded
users: 20
model: open
open: {rate: %s}
interval: %s
phases: {steady: %s}
actions:
  - {name: page, path: /one.html, weight: 3}
  - {name: missing, path: /missing}
`, c.Rate, c.Interval, c.Duration)
}

// sample is the process's memory at one moment of the run.
type sample struct {
	At   time.Duration
	RSS  uint64 // resident set, bytes (/proc/self/statm)
	Heap uint64 // live heap after a collection, bytes
}

// outcome is what a soak measured.
type outcome struct {
	Samples   []sample
	Start     sample // the first sample
	Base      sample // the first sample after the warm-up
	End       sample // the last sample before the run ended
	Intervals int    // recorded after the baseline, up to End
	Actions   uint64 // in the whole run
	Exit      int
	Output    string
}

// RSSGrowth is the resident set's growth from the baseline to the end.
func (o *outcome) RSSGrowth() int64 { return int64(o.End.RSS) - int64(o.Base.RSS) }

// HeapPerInterval is the live heap's growth from the baseline to the end,
// per interval recorded in between.
func (o *outcome) HeapPerInterval() float64 {
	if o.Intervals == 0 {
		return 0
	}
	return float64(int64(o.End.Heap)-int64(o.Base.Heap)) / float64(o.Intervals)
}

// soak runs throng in this process, as `throng run` does, and samples the
// process's memory while the load runs: the resident set, and the live heap
// after a forced collection (what the run holds, without the collector's
// slack).
func soak(c config) (*outcome, error) {
	if c.Warmup >= c.Duration {
		return nil, errors.New("the warm-up must be shorter than the run")
	}
	file := filepath.Join(c.Dir, "soak.yaml")
	if err := os.WriteFile(file, []byte(c.scenario()), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(c.Dir, "soak.json")
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	t0 := time.Now()
	go func() { done <- cli.Main([]string{"run", file, "-q", "-o", out}, &stdout, &stderr) }()
	o := &outcome{}
	tick := time.NewTicker(c.Every)
	defer tick.Stop()
	// Sampling stops a little before the planned end: the end is the run's
	// memory, not the writing of its result.
	last := c.Duration - c.Every/2
wait:
	for {
		select {
		case o.Exit = <-done:
			break wait
		case <-tick.C:
			if at := time.Since(t0); at <= last {
				o.Samples = append(o.Samples, take(at))
			}
		}
	}
	o.Output = stdout.String() + stderr.String()
	if o.Exit != 0 {
		return o, fmt.Errorf("throng run exited %d:\n%s", o.Exit, o.Output)
	}
	i := slices.IndexFunc(o.Samples, func(s sample) bool { return s.At >= c.Warmup })
	if len(o.Samples) < 2 || i < 0 || i == len(o.Samples)-1 {
		return o, fmt.Errorf("%d samples, none after the warm-up and before the end", len(o.Samples))
	}
	o.Start, o.Base, o.End = o.Samples[0], o.Samples[i], o.Samples[len(o.Samples)-1]
	o.Intervals = int((o.End.At - o.Base.At) / c.Interval)
	o.Actions = actionsIn(stdout.String())
	return o, nil
}

// take samples the process's memory now.
func take(at time.Duration) sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{At: at, RSS: rss(), Heap: ms.HeapAlloc}
}

// rss reads the resident set size of this process.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// actionsIn reads the run's action count from its summary ("Elapsed 1.5 s;
// 12,345 actions, ...").
func actionsIn(summary string) uint64 {
	_, rest, ok := strings.Cut(summary, "\nElapsed ")
	if !ok {
		return 0
	}
	_, rest, _ = strings.Cut(rest, "; ")
	n, _, _ := strings.Cut(rest, " ")
	v, _ := strconv.ParseUint(strings.ReplaceAll(n, ",", ""), 10, 64)
	return v
}

func mb(b uint64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
