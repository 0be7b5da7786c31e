package result

import (
	"math"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/sampler"
)

func sysValues(busyCores, kernelCores, ctx float64) sampler.SourceValues {
	return sampler.SourceValues{Name: "system", Up: true, Values: map[string]float64{
		"cpus":                             2,
		"cpu_user_seconds_total":           busyCores - kernelCores,
		"cpu_nice_seconds_total":           0,
		"cpu_system_seconds_total":         kernelCores,
		"cpu_irq_seconds_total":            0,
		"cpu_softirq_seconds_total":        0,
		"cpu_steal_seconds_total":          0,
		"cpu_iowait_seconds_total":         0,
		"cpu_user_seconds_total{cpu=0}":    99, // per-CPU series must not be added to the total
		"context_switches_total":           ctx,
		"net_receive_bytes_total{if=lo}":   125_000, // 1,000 Kbit/s
		"net_receive_bytes_total{if=eth0}": 0,
		"disk_reads_total{dev=vda}":        10,
		"disk_writes_total{dev=vda}":       30,
		"memory_used_bytes":                500e6,
	}}
}

func TestServerRowsFromCounters(t *testing.T) {
	mk := func(busy, kernel, ctx, genCPU float64, procUp bool) Interval {
		var s metrics.ActionSnapshot
		s.Count = 1000
		iv := Interval{DurationS: 1, Phase: "steady", UsersMean: 100, Actions: []ActionInterval{FromSnapshot(&s)}}
		iv.Counters = []sampler.SourceValues{
			sysValues(busy, kernel, ctx),
			{Name: "process nginx", Up: procUp, Err: map[bool]string{false: "no process named nginx"}[procUp], Values: map[string]float64{
				"process_cpu_user_seconds_total": 0.2, "process_cpu_system_seconds_total": 0.3,
				"process_rss_bytes": 12e6, "process_virtual_bytes": 80e6, "process_count": 2,
			}},
			{Name: "generator", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 0.1, "process_cpu_system_seconds_total": 0.1}},
		}
		if !procUp {
			iv.Counters[1].Values = nil
		}
		return iv
	}
	ivs := []Interval{mk(1.0, 0.4, 10_000, 0.2, true), mk(1.6, 0.8, 30_000, 0.2, true), mk(1.2, 0.6, 20_000, 0.2, false)}
	sums := Summarize([]string{"page"}, 0, ivs)
	s := Find(sums, "steady")
	row := func(id string) Row {
		r := s.FindRow(id)
		if r == nil {
			t.Fatalf("no row %s in %+v", id, s.Server)
		}
		return *r
	}
	near := func(got Num, want float64) bool { return math.Abs(float64(got)-want) < 1e-6 }
	// % processor time: busy cores / 2 CPUs: 50 %, 80 %, 60 %.
	if r := row("cpu_pct"); !near(r.Mean, 63.333333) || !near(r.Peak, 80) || r.Source != "system" || r.Label != "% processor time" {
		t.Errorf("cpu_pct %+v", r)
	}
	if r := row("kernel_pct"); !near(r.Mean, 30) || !near(r.Peak, 40) {
		t.Errorf("kernel_pct %+v", r)
	}
	if r := row("context_switches"); !near(r.Mean, 20_000) || !near(r.Peak, 30_000) {
		t.Errorf("context switches %+v", r)
	}
	if r := row("net_in_kbit"); !near(r.Mean, 1000) {
		t.Errorf("network %+v", r)
	}
	if r := row("disk_transfers"); !near(r.Mean, 40) {
		t.Errorf("disk %+v", r)
	}
	// The server process was down in the third interval: its rows come from
	// the two it answered, and the gap is reported with its reason.
	if r := row("server_rss_mb"); !near(r.Mean, 12) || r.Source != "process nginx" {
		t.Errorf("rss %+v", r)
	}
	var proc CounterSummary
	for _, c := range s.Counters {
		if c.Source == "process nginx" {
			proc = c
		}
	}
	if proc.Up != 2 || proc.Down != 1 || len(proc.Errors) != 1 || proc.Errors[0] != "no process named nginx" {
		t.Errorf("process summary %+v", proc)
	}
	// Cost: the server process's 0.5 cores, from the 2 intervals it was
	// read in (in the third, this machine less the generator is not the
	// server: other processes run here too), for 1,000 actions/s and 100
	// users.
	if r := row("server_cores"); !near(r.Mean, 0.5) || r.Source != "process nginx" {
		t.Errorf("server cores %+v", r)
	}
	if r := row("cpu_ms_per_action"); !near(r.Mean, 0.5) {
		t.Errorf("cpu ms per action %+v", r)
	}
	if r := row("users_per_core"); !near(r.Mean, 200) {
		t.Errorf("users per core %+v", r)
	}
	if r := row("cores_per_1000_users"); !near(r.Mean, 5) {
		t.Errorf("cores per 1000 users %+v", r)
	}
	// This machine's disk and network are the generator's and others' too:
	// no cost per action from them.
	if s.FindRow("disk_transfers_per_action") != nil || s.FindRow("net_bytes_per_action") != nil {
		t.Errorf("per-action rows from this machine: %+v", s.Server)
	}
}

// Without a server measured (no process, no node_exporter), there is no
// server cost: this machine's CPU less throng's is not the server's.
func TestNoServerCostWithoutAServer(t *testing.T) {
	var s metrics.ActionSnapshot
	s.Count = 1000
	iv := Interval{DurationS: 1, Phase: "steady", UsersMean: 10, Actions: []ActionInterval{FromSnapshot(&s)},
		Counters: []sampler.SourceValues{sysValues(1.5, 0.5, 5000),
			{Name: "generator", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 0.2, "process_cpu_system_seconds_total": 0.1}}}}
	sum := Find(Summarize([]string{"a"}, 0, []Interval{iv}), "steady")
	for _, id := range []string{"server_cores", "cpu_ms_per_action", "cores_per_1000_users", "users_per_core", "net_bytes_per_action", "disk_transfers_per_action"} {
		if r := sum.FindRow(id); r != nil {
			t.Errorf("%s without a server measured: %+v", id, r)
		}
	}
	if sum.FindRow("cpu_pct") == nil {
		t.Error("this machine's rows are gone too")
	}
}

// A process source's roots are kept: the PIDs its selection matched.
func TestProcessRootsAreKept(t *testing.T) {
	iv := Interval{DurationS: 1, Phase: "steady", Actions: []ActionInterval{{}}, Counters: []sampler.SourceValues{
		{Name: "process nginx", Up: true, Values: map[string]float64{"process_count": 3, "process_root{pid=812}": 1, "process_root{pid=97}": 1}}}}
	sum := Find(Summarize([]string{"a"}, 0, []Interval{iv}), "steady")
	if got := sum.Counters[0].Roots(); len(got) != 2 || got[0] != 97 || got[1] != 812 {
		t.Errorf("roots %v", got)
	}
}

// A node_exporter source, when present, is the machine the rows describe,
// and the cost rows use it whole (the generator is elsewhere), with its
// network and disk per action.
func TestNodeSourceIsTheMachine(t *testing.T) {
	node := sysValues(1.5, 0.5, 5000)
	node.Name = "node http://10.0.0.5:9100/metrics"
	var s metrics.ActionSnapshot
	s.Count = 500
	iv := Interval{DurationS: 1, Phase: "steady", UsersMean: 10, Actions: []ActionInterval{FromSnapshot(&s)},
		Counters: []sampler.SourceValues{sysValues(0.2, 0.1, 100), node}}
	sum := Find(Summarize([]string{"a"}, 0, []Interval{iv}), "steady")
	if r := sum.FindRow("cpu_pct"); r == nil || float64(r.Mean) != 75 || r.Source != node.Name {
		t.Errorf("cpu_pct %+v", r)
	}
	if r := sum.FindRow("server_cores"); r == nil || float64(r.Mean) != 1.5 {
		t.Errorf("server cores %+v", r)
	}
	if r := sum.FindRow("net_bytes_per_action"); r == nil || float64(r.Mean) != 125_000.0/500 || r.Source != node.Name {
		t.Errorf("network bytes per action %+v", r)
	}
}

// ServerRowIDs names every row a summary can hold: a phase fed by every
// kind of source (a remote machine, the local one, a server process, the
// generator) with every series the sources report holds exactly the rows
// it lists. (A row reading a series not given here fails the test: add
// the series.)
func TestServerRowIDsAreEveryRow(t *testing.T) {
	all := map[string]float64{"cpus": 2}
	for _, name := range []string{"context_switches_total", "disk_read_bytes_total", "disk_reads_total", "disk_writes_total",
		"disk_written_bytes_total", "interrupts_total", "major_page_faults_total", "memory_used_bytes", "net_receive_bytes_total",
		"net_transmit_bytes_total", "page_faults_total", "pages_in_total", "pages_out_total", "process_count",
		"process_involuntary_switches_total", "process_major_faults_total", "process_minor_faults_total", "process_rss_bytes",
		"process_virtual_bytes", "process_voluntary_switches_total", "procs_running",
		"cpu_user_seconds_total", "cpu_nice_seconds_total", "cpu_system_seconds_total", "cpu_irq_seconds_total",
		"cpu_softirq_seconds_total", "cpu_steal_seconds_total", "cpu_iowait_seconds_total",
		"process_cpu_user_seconds_total", "process_cpu_system_seconds_total"} {
		all[name] = 0.3
	}
	src := func(name string) sampler.SourceValues {
		v := map[string]float64{}
		for k, x := range all {
			v[k] = x
		}
		return sampler.SourceValues{Name: name, Up: true, Values: v}
	}
	var s metrics.ActionSnapshot
	s.Count = 1000
	iv := Interval{DurationS: 1, Phase: "steady", UsersMean: 100, Actions: []ActionInterval{FromSnapshot(&s)},
		Counters: []sampler.SourceValues{src("node http://127.0.0.1:9100/metrics"), src("system"), src("process nginx"), src("generator")}}
	sum := Find(Summarize([]string{"page"}, 0, []Interval{iv}), "steady")
	got := map[string]bool{}
	for _, r := range sum.Server {
		got[r.ID] = true
	}
	want := ServerRowIDs()
	for _, id := range want {
		if !got[id] {
			t.Errorf("row %s is listed but was not made from every series", id)
		}
		delete(got, id)
	}
	for id := range got {
		t.Errorf("row %s is made but not in ServerRowIDs", id)
	}
	if len(want) < 40 {
		t.Errorf("only %d server rows: %v", len(want), want)
	}
}

// Several server process groups (--server-process given twice: Dovecot and
// Postfix are one mail server) are the server's CPU together; one of them
// not answering leaves the interval without a server figure rather than a
// part of one.
func TestServerCoresOfSeveralProcessGroups(t *testing.T) {
	proc := func(name string, user, sys float64, up bool) sampler.SourceValues {
		return sampler.SourceValues{Name: name, Up: up, Values: map[string]float64{
			"process_cpu_user_seconds_total": user, "process_cpu_system_seconds_total": sys}}
	}
	var s metrics.ActionSnapshot
	s.Count = 100
	mk := func(up bool) *Summary {
		iv := Interval{DurationS: 1, Phase: "steady", UsersMean: 10, Actions: []ActionInterval{FromSnapshot(&s)},
			Counters: []sampler.SourceValues{sysValues(1.5, 0.2, 100), proc("process 812", 0.4, 0.41, true), proc("process 907", 0.11, 0.24, up)}}
		return Find(Summarize([]string{"a"}, 0, []Interval{iv}), "steady")
	}
	if r := mk(true).FindRow("server_cores"); r == nil || math.Abs(float64(r.Mean)-1.16) > 1e-9 || r.Source != "process 812 + process 907" {
		t.Errorf("two groups: server cores %+v, want 1.16 from both", r)
	}
	if r := mk(false).FindRow("server_cores"); r != nil {
		t.Errorf("one group down: server cores %+v, want none", r)
	}
}
