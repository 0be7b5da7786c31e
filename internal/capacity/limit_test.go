package capacity

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/threshold"
)

// limitSteps are three loads of users judged on mean < 100 ms: 100 and
// 200 meet it (50 ms), 400 fails it (150 ms); set changes each step's
// counters and counts.
func limitSteps(set func(s *Step)) []Step {
	var steps []Step
	for _, c := range []struct{ load, mean float64 }{{100, 50}, {200, 50}, {400, 150}} {
		s := Step{Request: Request{Kind: Bracket, Load: c.load, Duration: 10 * time.Second}, Elapsed: 10 * time.Second,
			SLOs: []Figure{{Value: c.mean, HalfWidth: 1}}, Throughput: 10 * c.load, Count: uint64(100 * c.load),
			Counters: NaNCounters()}
		set(&s)
		steps = append(steps, s)
	}
	return steps
}

func limitCfg(t *testing.T) Config {
	return Config{SLOs: []threshold.Threshold{mustSLO(t, "mean < 100ms")}, Dimension: Users, Min: 100, Max: 10000,
		NoWarmUp: true, StepDuration: 10 * time.Second}
}

// The first resource at its mark, walking the loads up to the lowest that
// failed, each case's truth worked out by hand from the marks (CPU and
// disk 90 %, memory 95 % or 100 major faults/s, network 90 %,
// connections 0.1 % of actions).
func TestFirstLimit(t *testing.T) {
	at := func(load float64, f func(c *Step)) func(s *Step) {
		return func(s *Step) {
			if s.Load == load {
				f(s)
			}
		}
	}
	cpu := func(s *Step) { s.Counters.ServerCPU = s.Load / 1000 } // 10 %, 20 %, 40 %
	for _, c := range []struct {
		name     string
		set      func(s *Step)
		resource string
		load     float64
		text     string
	}{
		{"server CPU", func(s *Step) {
			s.Counters.ServerCPU = map[float64]float64{100: 0.45, 200: 0.94, 400: 1}[s.Load]
		}, "server CPU", 200, "server CPU (94 % at 200 users)"},
		{"disk", at(200, func(s *Step) { s.Counters.ServerCPU, s.Counters.DiskBusy = 0.5, 0.95 }), "disk", 200, "disk (95 % at 200 users)"},
		// CPU 92 % is 1.02 of its mark, the disk's 99 % 1.1 of its: the disk.
		{"furthest past its mark", at(200, func(s *Step) { s.Counters.ServerCPU, s.Counters.DiskBusy = 0.92, 0.99 }), "disk", 200, "disk (99 % at 200 users)"},
		{"memory", at(200, func(s *Step) { s.Counters.Memory = 0.97 }), "memory", 200, "memory (97 % at 200 users)"},
		{"memory under its mark", at(200, func(s *Step) { s.Counters.Memory = 0.94 }), "none measured", math.NaN(), ""},
		{"paging", at(200, func(s *Step) { s.Counters.Memory, s.Counters.MajorFaultsPerS = 0.8, 250 }), "memory", 200,
			"memory (paging: 250 major page faults/s at 200 users)"},
		{"network", at(200, func(s *Step) { s.Counters.Network = 0.95 }), "network", 200, "network (95 % at 200 users)"},
		// 8 refused and 4 broken of 20,000 actions: 0.06 %, under the mark;
		// 12 of 10,000 at 100 users: 0.12 %, over it.
		{"connections under the mark", at(200, func(s *Step) { s.ErrorsByClass = map[string]uint64{"dial": 8, "io": 4} }), "none measured", math.NaN(), ""},
		{"connections", at(100, func(s *Step) { s.ErrorsByClass = map[string]uint64{"dial": 8, "io": 4, "status": 100} }), "connections", 100,
			"connections (12 connections refused or broken at 100 users)"},
		// At the load that failed, a saturation counts; past it, not.
		{"at the failure", at(400, func(s *Step) { s.Counters.ServerCPU = 0.99 }), "server CPU", 400, "server CPU (99 % at 400 users)"},
		{"none measured", cpu, "none measured", math.NaN(), "none measured (no measured resource reached its mark up to 400 users, server CPU at most 40 %"},
		// An invalid step tells nothing of the server.
		{"invalid step", at(200, func(s *Step) {
			s.Counters.ServerCPU = 0.99
			s.Invalid = []Invalid{{Kind: FewSamples, Why: "few"}}
		}), "none measured", math.NaN(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ans := Conclude(limitCfg(t), limitSteps(c.set))
			l := ans.FirstLimit
			if l.Resource != c.resource || !(l.Load == c.load || math.IsNaN(c.load) && math.IsNaN(l.Load)) {
				t.Fatalf("first limit %+v, want %s at %g", l, c.resource, c.load)
			}
			if !strings.HasPrefix(l.String(), c.text) {
				t.Errorf("says %q, want %q", l.String(), c.text)
			}
			if c.text != "" && !strings.Contains(ans.Statement, "first limit: "+c.text) {
				t.Errorf("statement %q does not give it", ans.Statement)
			}
		})
	}
	// Past the lowest load that failed, a saturation is not the limit.
	steps := append(limitSteps(cpu), Step{Request: Request{Kind: Bracket, Load: 800, Duration: 10 * time.Second},
		SLOs: []Figure{{Value: 500, HalfWidth: 1}}, Counters: Counters{ServerCPU: 1, ServerCores: 2, DiskBusy: 1, Memory: 1, Network: 1}})
	if l := Conclude(limitCfg(t), steps).FirstLimit; l.Resource != "none measured" {
		t.Errorf("saturated only past the failure: %v", l)
	}
	// A generator bound at 400 users (3 steps: its ceiling) is the limit,
	// and says why.
	steps = limitSteps(cpu)[:2]
	for range 3 {
		s := limitSteps(cpu)[2]
		s.Invalid = []Invalid{{Kind: GeneratorBound, Why: "the load generator was the bottleneck in 3 of 8 intervals (generator CPU 90% of 2 cores): there the figures measure it, not the server"}}
		steps = append(steps, s)
	}
	ans := Conclude(limitCfg(t), steps)
	if l := ans.FirstLimit; l.Resource != "generator" || l.Load != 400 || l.String() != "generator (the load generator was the bottleneck in 3 of 8 intervals (generator CPU 90% of 2 cores) at 400 users)" {
		t.Errorf("generator ceiling: %q", l)
	}
	if !math.IsInf(ans.High, 1) || ans.Low != 200 {
		t.Errorf("%s: want at least 200 users, no upper end", ans.Statement)
	}
}

// Costs at the highest load that met the SLOs: 200 users, the server
// using 1.5 cores for 2,000 actions/s: 0.75 CPU-ms per action, 0.0075
// cores per user, 133.3 users per core. Without the server's CPU: none.
func TestCostsAt(t *testing.T) {
	steps := limitSteps(func(s *Step) { s.Counters.ServerCores = s.Load / 200 * 1.5 })
	ans := Conclude(limitCfg(t), steps)
	c := ans.Costs
	if c == nil {
		t.Fatal("no costs")
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if c.Load != 200 || c.Unit != "users" || !near(c.CPUMsPerAction, 0.75) || !near(c.CoresPerUnit, 0.0075) || !near(c.UnitsPerCore, 400.0/3) {
		t.Errorf("costs %+v, want 200 users: 0.75 ms per action, 0.0075 cores per user, 133.3 users per core", *c)
	}
	// A rate: 3,000/s on 1.5 cores is 0.5 ms per action and 2,000/s per core.
	st := Step{Request: Request{Load: 3000}, Throughput: 3000, Counters: NaNCounters()}
	st.Counters.ServerCores = 1.5
	if c := costsAt(&st); !near(c.CPUMsPerAction, 0.5) || !near(c.UnitsPerCore, 2000) || !near(c.CoresPerUnit, 0.0005) {
		t.Errorf("rate costs %+v", *c)
	}
	st.Throughput = 0 // nothing succeeded: no cost per action
	if c := costsAt(&st); !math.IsNaN(c.CPUMsPerAction) {
		t.Errorf("no throughput: %g ms per action", c.CPUMsPerAction)
	}
	if ans := Conclude(limitCfg(t), limitSteps(func(*Step) {})); ans.Costs != nil {
		t.Errorf("costs without the server's CPU: %+v", *ans.Costs)
	}
}

// FromRun reads the resources from the run's counters: the server's CPU
// (the server process's cores over the machine's CPUs), the busiest disk,
// memory, major faults, and the network where the link's speed is known.
func TestFromRunCounters(t *testing.T) {
	var ivs []result.Interval
	for range 10 {
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10)},
			Counters: []sampler.SourceValues{
				{Name: "system", Up: true, Values: map[string]float64{
					"cpus": 4, "cpu_user_seconds_total": 2, "cpu_system_seconds_total": 1,
					"disk_io_seconds_total{dev=vda}": 0.3, "disk_io_seconds_total{dev=vdb}": 0.8,
					"memory_total_bytes": 8e9, "memory_used_bytes": 6e9, "major_page_faults_total": 12,
					// eth0: 1 Gbit/s = 125 MB/s, 50 MB/s in, 100 MB/s out: 80 %.
					"net_speed_bytes{if=eth0}": 125e6, "net_receive_bytes_total{if=eth0}": 50e6, "net_transmit_bytes_total{if=eth0}": 100e6,
					// lo: no speed, whatever its traffic.
					"net_receive_bytes_total{if=lo}": 9e9, "net_transmit_bytes_total{if=lo}": 9e9,
				}},
				{Name: "process nginx", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 1.5, "process_cpu_system_seconds_total": 0.5}},
			}})
	}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p50 < 1s")}, Dimension: Users, Min: 1, Max: 100}
	st := FromRun(cfg, Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}, mkRun("closed", []string{"get"}, 0, ivs), time.Second)
	c := st.Counters
	want := Counters{ServerCPU: 0.5, ServerCores: 2, DiskBusy: 0.8, Memory: 0.75, Network: 0.8, MajorFaultsPerS: 12, GeneratorCPU: 0.25}
	if math.Abs(c.ServerCPU-want.ServerCPU) > 1e-9 || c.ServerCores != want.ServerCores || math.Abs(c.DiskBusy-want.DiskBusy) > 1e-9 ||
		c.Memory != want.Memory || math.Abs(c.Network-want.Network) > 1e-9 || c.MajorFaultsPerS != want.MajorFaultsPerS || c.GeneratorCPU != want.GeneratorCPU {
		t.Errorf("counters %+v, want %+v", c, want)
	}
	// No link speed: the network is not measured.
	for i := range ivs {
		delete(ivs[i].Counters[0].Values, "net_speed_bytes{if=eth0}")
	}
	st = FromRun(cfg, Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}, mkRun("closed", []string{"get"}, 0, ivs), time.Second)
	if !math.IsNaN(st.Counters.Network) {
		t.Errorf("network %g without a link speed, want NaN", st.Counters.Network)
	}
}
