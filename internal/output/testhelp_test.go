package output

import (
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// t0 is the start of the test repetitions.
var t0 = time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)

// knownInterval is an interval whose figures the tests know: action "page"
// with n actions of which errs timeouts and one skipped, latencies lats
// (µs); action "post" with 2 actions of 3 ms.
func knownInterval(index int, phase string, lats []uint64, errs uint64) *result.Interval {
	iv := &result.Interval{Index: index, StartS: float64(index), DurationS: 1, Phase: phase, ActiveUsers: 3,
		Client: result.Client{CPUCores: 0.5, Bound: index == 1}}
	var page, post result.ActionInterval
	for _, v := range lats {
		page.Latency.Record(v)
	}
	page.Count = uint64(len(lats))
	page.Errors = map[string]uint64{"timeout": errs, "skipped": 1}
	page.BytesIn, page.BytesOut, page.Dropped = 1000, 100, 2
	post.Count = 2
	post.Latency.RecordN(3000, 2)
	iv.Actions = []result.ActionInterval{page, post}
	iv.Counters = []sampler.SourceValues{
		{Name: "system", Up: true, Values: map[string]float64{
			"cpu_user_seconds_total": 0.25, "cpu_user_seconds_total{cpu=0}": 0.1, "memory_used_bytes": 1e9,
			"disk_reads_total{dev=vda}": 10}},
		{Name: "process 1", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 0.5, "process_rss_bytes": 4096}},
		{Name: "node http://127.0.0.1:9100/metrics", Up: false},
	}
	return iv
}

var names = []string{"page", "post"}

// knownState is two intervals of the steady phase and one of ramp-down.
func knownIntervals() []*Interval {
	return []*Interval{
		NewInterval(0, t0, names, knownInterval(0, "steady", []uint64{50, 100, 100, 900, 1000, 2_000_000}, 1)),
		NewInterval(0, t0, names, knownInterval(1, "steady", []uint64{99, 101, 250, 251}, 0)),
		NewInterval(0, t0, names, knownInterval(2, "ramp-down", []uint64{70}, 0)),
	}
}

var _ = metrics.Micros
