package capacity

import (
	"math"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/threshold"
)

// The CPU mark of a ceiling of c cores: 1 − 0.2/√c, c at least 1, capped
// at 0.90 (from 4 cores on); 0.90 when the ceiling is unknown.
func TestCPUMarkFor(t *testing.T) {
	for _, c := range []struct{ cores, mark float64 }{
		{0.25, 0.8}, {1, 0.8}, {2, 1 - 0.2/math.Sqrt2}, {3, 1 - 0.2/math.Sqrt(3)}, {4, 0.9}, {16, 0.9}, {64, 0.9},
		{math.NaN(), 0.9}, {0, 0.9},
	} {
		if got := CPUMarkFor(c.cores); math.Abs(got-c.mark) > 1e-12 {
			t.Errorf("CPUMarkFor(%g) = %g, want %g", c.cores, got, c.mark)
		}
	}
}

// procCounters are a server's process group read in one interval: its
// cores (as the user CPU rate), threads, pinned CPUs (0: not read), CPU
// quota (0: none), and its quota's periods and throttled periods per
// second.
type procCounters struct {
	name                              string
	cores, threads, cpus, quota       float64
	periodsPerS, throttledPeriodsPerS float64
}

// ceilingStep is a step at 200/s on a machine of 2 CPUs whose server is
// the groups given, read by FromRun.
func ceilingStep(t *testing.T, groups ...procCounters) Step {
	t.Helper()
	var ivs []result.Interval
	for range 10 {
		cs := []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{"cpus": 2, "cpu_user_seconds_total": 1.2}}}
		for _, g := range groups {
			v := map[string]float64{"process_cpu_user_seconds_total": g.cores, "process_cpu_system_seconds_total": 0,
				"process_count": 1, "process_threads": g.threads}
			if g.cpus > 0 {
				v["process_cpus"] = g.cpus
			}
			if g.quota > 0 {
				v["process_cpu_quota_cores"] = g.quota
				v["process_cpu_periods_total"] = g.periodsPerS
				v["process_cpu_throttled_periods_total"] = g.throttledPeriodsPerS
				v["process_cpu_throttled_seconds_total"] = g.throttledPeriodsPerS * 0.075
			}
			cs = append(cs, sampler.SourceValues{Name: "process " + g.name, Up: true, Values: v})
		}
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10)}, Counters: cs})
	}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000}
	return FromRun(cfg, Request{Kind: Bisect, Load: 200, Duration: 10 * time.Second}, mkRun("open", []string{"get"}, 0, ivs), time.Second)
}

// The server's ceiling is the least of its machine's CPUs, the CPUs it
// is pinned to, its CPU quota and its threads; its CPU is named the first
// limit at the mark of that ceiling (one core: 80 %; two: 86 %), or when
// its quota throttled it in 10 % of its periods, and not below. Each
// truth is worked out by hand from the rule.
func TestServerCeilingAndItsMark(t *testing.T) {
	mosq := func(cores float64) procCounters { return procCounters{name: "mosquitto", cores: cores, threads: 1} }
	nginx := func(cores, throttled float64) procCounters {
		// a master and a worker in a cgroup of a quarter of a CPU: 10
		// periods/s with work.
		return procCounters{name: "nginx", cores: cores, threads: 2, quota: 0.25, periodsPerS: 10, throttledPeriodsPerS: 10 * throttled}
	}
	for _, c := range []struct {
		name      string
		groups    []procCounters
		ceiling   float64
		by        string
		share     float64
		throttled float64 // NaN: no quota
		limit     string  // the first limit's text; "" none measured
	}{
		// mosquitto's one thread: 84 % of its core, under the 90 % of old.
		{"one thread at 84 %", []procCounters{mosq(0.84)}, 1, "threads", 0.84, math.NaN(), "server CPU (84 % of one thread at 200/s)"},
		{"one thread at 81 %", []procCounters{mosq(0.81)}, 1, "threads", 0.81, math.NaN(), "server CPU (81 % of one thread at 200/s)"},
		{"one thread at 79 %", []procCounters{mosq(0.79)}, 1, "threads", 0.79, math.NaN(), ""},
		// 8 threads free on 2 CPUs: the machine's ceiling, marked at 85.9 %.
		{"two CPUs at 87 %", []procCounters{{name: "app", cores: 1.74, threads: 8}}, 2, "machine", 0.87, math.NaN(), "server CPU (87 % at 200/s)"},
		{"two CPUs at 85 %", []procCounters{{name: "app", cores: 1.70, threads: 8}}, 2, "machine", 0.85, math.NaN(), ""},
		// An affinity of every CPU (as most processes have) is no pin.
		{"affinity of every CPU", []procCounters{{name: "app", cores: 1.74, threads: 8, cpus: 2}}, 2, "machine", 0.87, math.NaN(), "server CPU (87 % at 200/s)"},
		{"pinned to one CPU", []procCounters{{name: "app", cores: 0.85, threads: 8, cpus: 1}}, 1, "pinned", 0.85, math.NaN(),
			"server CPU (85 % of the 1 CPU it is pinned to at 200/s)"},
		// mosquitto pinned to one CPU: its one thread says it first.
		{"one thread pinned", []procCounters{{name: "mosquitto", cores: 0.84, threads: 1, cpus: 1}}, 1, "threads", 0.84, math.NaN(),
			"server CPU (84 % of one thread at 200/s)"},
		// Under a quarter of a CPU: 0.21 cores are 84 %; 0.19 are 76 %.
		{"quota at 84 %", []procCounters{nginx(0.21, 0.05)}, 0.25, "quota", 0.84, 0.05, "server CPU (84 % of a 0.25-core CPU quota at 200/s)"},
		{"quota at 76 %", []procCounters{nginx(0.19, 0.05)}, 0.25, "quota", 0.76, 0.05, ""},
		// Throttled in 15 % of its periods at 60 %: the quota binds.
		{"quota throttling", []procCounters{nginx(0.15, 0.15)}, 0.25, "quota", 0.6, 0.15,
			"server CPU (throttled in 15 % of periods by a 0.25-core CPU quota, 60 % busy at 200/s)"},
		{"quota throttling under its mark", []procCounters{nginx(0.15, 0.08)}, 0.25, "quota", 0.6, 0.08, ""},
		// The least bound wins: a quota of 0.5 under a pin to one CPU.
		{"quota under the pin", []procCounters{{name: "app", cores: 0.3, threads: 4, cpus: 1, quota: 0.5, periodsPerS: 10}}, 0.5, "quota", 0.6, 0, ""},
		// Two groups, one free of any quota: no quota bounds them; their
		// threads (1 + 1) do, as many as the machine has CPUs.
		{"one group without a quota", []procCounters{mosq(0.5), {name: "b", cores: 0.2, threads: 1, quota: 0.25, periodsPerS: 10}}, 2, "threads", 0.35, 0, ""},
		// Two groups under a quarter of a CPU each: half a CPU together.
		{"two quotas", []procCounters{{name: "a", cores: 0.2, threads: 3, quota: 0.25, periodsPerS: 10}, {name: "b", cores: 0.21, threads: 3, quota: 0.25, periodsPerS: 10}},
			0.5, "quota", 0.82, 0, "server CPU (82 % of a 0.5-core CPU quota at 200/s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := ceilingStep(t, c.groups...)
			k := &st.Counters
			if math.Abs(k.ServerCeiling-c.ceiling) > 1e-9 || k.ServerCeilingBy != c.by {
				t.Fatalf("ceiling %g by %q, want %g by %q", k.ServerCeiling, k.ServerCeilingBy, c.ceiling, c.by)
			}
			if math.Abs(k.ServerCPU-c.share) > 1e-9 {
				t.Errorf("server CPU %g, want %g", k.ServerCPU, c.share)
			}
			if math.Abs(k.ServerThrottled-c.throttled) > 1e-9 || math.IsNaN(k.ServerThrottled) != math.IsNaN(c.throttled) {
				t.Errorf("throttled %g, want %g", k.ServerThrottled, c.throttled)
			}
			cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000, NoWarmUp: true}
			l := firstLimit(analyze(cfg, []Step{st}), nil)
			switch {
			case c.limit == "" && l.Resource != "none measured":
				t.Errorf("first limit %q, want none measured", l)
			case c.limit != "" && l.String() != c.limit:
				t.Errorf("first limit %q, want %q", l, c.limit)
			}
		})
	}
}

// The record keeps the ceiling and the throttling, and reads them back.
func TestRecordKeepsTheCeiling(t *testing.T) {
	st := ceilingStep(t, procCounters{name: "nginx", cores: 0.2, threads: 2, quota: 0.25, periodsPerS: 10, throttledPeriodsPerS: 2})
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000, NoWarmUp: true}
	rs := StepRecord(cfg, &st, nil)
	if c := rs.Counters; float64(c.ServerCeiling) != 0.25 || c.ServerCeilingBy != "quota" || math.Abs(float64(c.ServerThrottled)-0.2) > 1e-9 {
		t.Errorf("recorded %+v", c)
	}
}
