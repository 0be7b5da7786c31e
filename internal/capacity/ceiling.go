package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// Ceiling is the most CPU a server can use, in cores, and what sets it:
// the least of
//
//   - "machine": its machine's CPUs (the first node_exporter source, else
//     this machine);
//   - "pinned": the CPUs its processes' threads may run on (process_cpus
//     from their Cpus_allowed_list: taskset, a cpuset cgroup; the most of
//     any --server-process group);
//   - "quota": the CPU quota of its cgroups (process_cpu_quota_cores: a
//     container's --cpus, systemd's CPUQuota; summed over the
//     --server-process groups, and none unless every group has one);
//   - "threads": its threads (process_threads, summed over the groups): a
//     thread runs on one core at a time, so a server of one event-loop
//     thread (mosquitto) uses at most one core whatever the machine has.
//
// On a tie, threads are named before a quota, a quota before the
// machine, the machine before a pin (a pin to every CPU is no pin);
// mosquitto pinned to one CPU is "one thread".
// The threads bound counts every thread, idle or not: a server whose
// work is done by one thread beside idle helpers (nginx's master beside
// one worker) is bounded by its thread count, not by the one that works.
type Ceiling struct {
	Cores float64 // NaN: unknown
	By    string  // "machine", "pinned", "quota", "threads"; "" unknown
}

// Text says it in words: "a 0.25-core CPU quota", "one thread", "3
// threads", "the 1 CPU it is pinned to", "2 CPUs".
func (c Ceiling) Text() string {
	n := strconv.FormatFloat(math.Round(c.Cores*1000)/1000, 'f', -1, 64) // 0.25, 1, 2.5
	switch c.By {
	case "quota":
		return "a " + n + "-core CPU quota"
	case "threads":
		if c.Cores == 1 {
			return "one thread"
		}
		return n + " threads"
	case "pinned":
		return "the " + n + " " + plural(c.Cores, "CPU") + " it is pinned to"
	}
	return n + " " + plural(c.Cores, "CPU")
}

func plural(n float64, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// serverCeiling reads a server's ceiling from a phase's counters (see
// Ceiling), machine being its machine's source (nil: unknown).
func serverCeiling(sum *result.Summary, machine *result.CounterSummary) Ceiling {
	c := Ceiling{Cores: math.NaN()}
	lower := func(cores float64, by string) {
		if cores > 0 && !(cores >= c.Cores) {
			c = Ceiling{cores, by}
		}
	}
	pinned, quota, threads, groups, quotas := 0.0, 0.0, 0.0, 0, 0
	for i := range sum.Counters {
		cs := &sum.Counters[i]
		if !strings.HasPrefix(cs.Source, "process ") || cs.Up == 0 {
			continue
		}
		groups++
		pinned = math.Max(pinned, cs.Mean["process_cpus"])
		if q := cs.Mean["process_cpu_quota_cores"]; q > 0 {
			quota += q
			quotas++
		}
		threads += cs.Mean["process_threads"]
	}
	// On a tie the first bound named wins: what the server is (its
	// threads) before what was done to it (a quota), before its machine.
	// A pin counts only when it leaves fewer CPUs than the machine has:
	// every process has an affinity, most of them every CPU.
	lower(threads, "threads")
	if quotas > 0 && quotas == groups {
		lower(quota, "quota")
	}
	if machine != nil {
		lower(machine.Mean["cpus"], "machine")
	}
	lower(pinned, "pinned")
	return c
}

// serverThrottled is the share of its CPU quota's enforcement periods in
// which the quota stopped the server (process_cpu_throttled_periods_total
// over process_cpu_periods_total, over the --server-process groups under
// a quota); NaN without a quota, or no period with work.
func serverThrottled(sum *result.Summary) float64 {
	var periods, throttled float64
	for i := range sum.Counters {
		cs := &sum.Counters[i]
		if strings.HasPrefix(cs.Source, "process ") {
			periods += cs.Mean["process_cpu_periods_total"]
			throttled += cs.Mean["process_cpu_throttled_periods_total"]
		}
	}
	if !(periods > 0) {
		return math.NaN()
	}
	return math.Min(1, throttled/periods)
}

// CPU saturation: the server's CPU counts as saturated at CPUMarkFor(c)
// of a ceiling of c cores, or when its quota stopped it in ThrottledMark
// of its periods.
//
// The mark comes from queueing. The CPU is saturated when most of the
// work must wait for it: with c cores seen as c servers of a queue, the
// utilization at which the probability of waiting reaches a given level
// rises with c, as 1 − β/√c (square-root staffing: Halfin and Whitt,
// 1981, where that probability depends on β alone). β = 0.2 makes it
// about 0.8 (Halfin–Whitt: [1 + βΦ(β)/φ(β)]⁻¹ = 0.77; exactly 0.8 for one
// core, an M/M/1 whose probability of waiting is its utilization, and
// whose mean wait is then 4 service times). The mark is capped at 0.90,
// reached at 4 cores: a larger machine is not c independent servers
// (shared caches, locks, hyperthreads), and 90 % is the usual mark.
// A ceiling under one core (a quota of a quarter of a CPU) is one server
// slowed down, not a fraction of one: c is at least 1. Unknown ceiling:
// 0.90.
//
// Marks: 1 core 80 %, 2 cores 86 %, 3 cores 88 %, 4 and more 90 %.
const (
	CPUMark       = 0.90 // the cap, and the mark when the ceiling is unknown
	CPUMarkBeta   = 0.2
	ThrottledMark = 0.10
)

// CPUMarkFor is the share of a ceiling of cores at which the server's CPU
// counts as saturated (see CPUMarkBeta).
func CPUMarkFor(cores float64) float64 {
	if !(cores > 0) {
		return CPUMark
	}
	return math.Min(CPUMark, 1-CPUMarkBeta/math.Sqrt(math.Max(1, cores)))
}

// ThrottledMark: a period in which the quota stops the server stalls all
// its work until the period ends (up to 75 ms of 100 for a quarter of a
// CPU); throttled in one period of ten, the stalls alone put more than
// 1 % of the work (a p99) behind a wait far longer than its service:
// the quota, not the work, then sets the latency.

// serverCPUText is the detail of a server CPU limit when its ceiling is
// not simply its machine's, or its quota's throttling named it: "84 % of
// one thread", "throttled in 35 % of periods by a 0.25-core CPU quota,
// 71 % busy".
func serverCPUText(c *Counters) string {
	if c.ServerThrottled >= ThrottledMark && !(c.ServerCPU >= CPUMarkFor(c.ServerCeiling)) {
		busy := ""
		if !math.IsNaN(c.ServerCPU) {
			busy = fmt.Sprintf(", %.0f %% busy", 100*c.ServerCPU)
		}
		return fmt.Sprintf("throttled in %.0f %% of periods by %s%s", 100*c.ServerThrottled, c.ceiling().Text(), busy)
	}
	if c.ServerCeilingBy == "" || c.ServerCeilingBy == "machine" || math.IsNaN(c.ServerCPU) {
		return ""
	}
	return fmt.Sprintf("%.0f %% of %s", 100*c.ServerCPU, c.ceiling().Text())
}

func (c *Counters) ceiling() Ceiling { return Ceiling{c.ServerCeiling, c.ServerCeilingBy} }
