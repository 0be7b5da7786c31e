package result

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/sampler"
)

// CounterSummary is one counter source over a phase: the time-weighted mean
// and the peak (highest interval) of each series, over the intervals in
// which the source answered; the others are gaps, counted with their reasons.
type CounterSummary struct {
	Source string             `json:"source"`
	Up     int                `json:"up_intervals"`
	Down   int                `json:"down_intervals"`
	Errors []string           `json:"errors,omitempty"` // distinct reasons, at most maxErrors
	Mean   map[string]float64 `json:"mean,omitempty"`
	Peak   map[string]float64 `json:"peak,omitempty"`
}

const maxErrors = 5

// Row is one figure of the server table: a seed-named counter ("% processor
// time", "context switches/s") or a derived cost ("server CPU-ms per
// action"), with its mean and peak over a phase.
type Row struct {
	ID     string `json:"id"`     // stable: cpu_pct, kernel_pct, ...
	Label  string `json:"label"`  // the seed tables' wording
	Source string `json:"source"` // the counter source it comes from
	Mean   Num    `json:"mean"`
	Peak   Num    `json:"peak"` // NaN (null) for rows that are ratios of means
}

// Source roles, from their names (see the sampler's sources).
func isProcess(name string) bool   { return strings.HasPrefix(name, "process ") }
func isGenerator(name string) bool { return name == "generator" }

// rowDef computes one row's value for an interval from a source's values.
type rowDef struct {
	id, label string
	machine   bool // from the machine source (else the server process)
	value     func(v sampler.SourceValues) (float64, bool)
}

func sum(name string) func(v sampler.SourceValues) (float64, bool) {
	return func(v sampler.SourceValues) (float64, bool) { return v.Sum(name) }
}

// cpuPct is the share of all CPUs in the given modes, in percent.
func cpuPct(modes ...string) func(v sampler.SourceValues) (float64, bool) {
	return func(v sampler.SourceValues) (float64, bool) {
		cpus, ok := v.Values["cpus"]
		if !ok || cpus <= 0 {
			return 0, false
		}
		total := 0.0
		for _, m := range modes {
			x, ok := v.Sum("cpu_" + m + "_seconds_total")
			if !ok {
				return 0, false
			}
			total += x
		}
		// Ticks of 10 ms over a short interval can add up a hair past all
		// the CPUs; a share of all CPUs cannot exceed 100 %.
		return min(100, 100*total/cpus), true
	}
}

func scaled(f func(v sampler.SourceValues) (float64, bool), k float64) func(v sampler.SourceValues) (float64, bool) {
	return func(v sampler.SourceValues) (float64, bool) {
		x, ok := f(v)
		return x * k, ok
	}
}

func plus(fs ...func(v sampler.SourceValues) (float64, bool)) func(v sampler.SourceValues) (float64, bool) {
	return func(v sampler.SourceValues) (float64, bool) {
		t := 0.0
		for _, f := range fs {
			x, ok := f(v)
			if !ok {
				return 0, false
			}
			t += x
		}
		return t, true
	}
}

// rowDefs are the server table's counter rows, labelled as the studies
// (docs/studies.md) label them where they map.
var rowDefs = []rowDef{
	{"cpu_pct", "% processor time", true, cpuPct("user", "nice", "system", "irq", "softirq", "steal")},
	{"kernel_pct", "kernel %", true, cpuPct("system", "irq", "softirq")},
	{"iowait_pct", "I/O wait %", true, cpuPct("iowait")},
	{"context_switches", "context switches/s", true, sum("context_switches_total")},
	{"interrupts", "interrupts/s", true, sum("interrupts_total")},
	{"run_queue", "run queue (procs running)", true, sum("procs_running")},
	{"net_in_kbit", "network in Kbit/s", true, scaled(sum("net_receive_bytes_total"), 8.0/1000)},
	{"net_out_kbit", "network out Kbit/s", true, scaled(sum("net_transmit_bytes_total"), 8.0/1000)},
	{"disk_transfers", "disk transfers/s", true, plus(sum("disk_reads_total"), sum("disk_writes_total"))},
	{"disk_mb", "disk MB/s", true, scaled(plus(sum("disk_read_bytes_total"), sum("disk_written_bytes_total")), 1e-6)},
	{"page_faults", "page faults/s", true, sum("page_faults_total")},
	{"major_faults", "major page faults/s", true, sum("major_page_faults_total")},
	{"pages", "pages/s (paged in+out, KiB)", true, plus(sum("pages_in_total"), sum("pages_out_total"))},
	{"memory_used_mb", "memory used MB", true, scaled(sum("memory_used_bytes"), 1e-6)},
	{"server_cpu_pct", "server process % of one core", false, scaled(plus(sum("process_cpu_user_seconds_total"), sum("process_cpu_system_seconds_total")), 100)},
	{"server_kernel_pct", "server process kernel % of one core", false, scaled(sum("process_cpu_system_seconds_total"), 100)},
	{"server_switches", "server context switches/s", false, plus(sum("process_voluntary_switches_total"), sum("process_involuntary_switches_total"))},
	{"server_page_faults", "server page faults/s", false, plus(sum("process_minor_faults_total"), sum("process_major_faults_total"))},
	{"server_virtual_mb", "server virtual memory MB", false, scaled(sum("process_virtual_bytes"), 1e-6)},
	{"server_rss_mb", "server RSS MB", false, scaled(sum("process_rss_bytes"), 1e-6)},
	{"server_processes", "server processes", false, sum("process_count")},
}

// pickSources returns, by index in the interval's counters (-1 when
// absent): the server's machine (the first node_exporter source, else the
// local system), the server process (the first one), the generator, and the
// local system (the client machine).
func pickSources(cs []sampler.SourceValues) (machine, process, generator, local int) {
	machine, process, generator, local = -1, -1, -1, -1
	for i, c := range cs {
		switch {
		case isNode(c.Name) && machine < 0:
			machine = i
		case c.Name == "system" && local < 0:
			local = i
		case isProcess(c.Name) && process < 0:
			process = i
		case isGenerator(c.Name) && generator < 0:
			generator = i
		}
	}
	if machine < 0 {
		machine = local
	}
	return
}

// counterSum accumulates the counters of a phase's intervals: per source,
// the time-weighted sum and the peak of each series, and its gaps.
type counterSum struct {
	order []string
	by    map[string]*counterSource
}

type counterSource struct {
	up, down  int
	errors    []string
	weight    float64
	sum, peak map[string]float64
}

func (c *counterSum) add(iv *Interval) {
	for _, v := range iv.Counters {
		cs := c.by[v.Name]
		if cs == nil {
			if c.by == nil {
				c.by = map[string]*counterSource{}
			}
			cs = &counterSource{sum: map[string]float64{}, peak: map[string]float64{}}
			c.by[v.Name] = cs
			c.order = append(c.order, v.Name)
		}
		if !v.Up {
			cs.down++
			if v.Err != "" && len(cs.errors) < maxErrors && !contains(cs.errors, v.Err) {
				cs.errors = append(cs.errors, v.Err)
			}
			continue
		}
		cs.up++
		w := iv.DurationS
		cs.weight += w
		for k, x := range v.Values {
			cs.sum[k] += x * w
			if p, ok := cs.peak[k]; !ok || x > p {
				cs.peak[k] = x
			}
		}
	}
}

// result is each source's summary, in the order the sources first appeared.
func (c *counterSum) result() []CounterSummary {
	out := make([]CounterSummary, 0, len(c.order))
	for _, name := range c.order {
		cs := c.by[name]
		s := CounterSummary{Source: name, Up: cs.up, Down: cs.down, Errors: append([]string(nil), cs.errors...),
			Mean: make(map[string]float64, len(cs.sum)), Peak: make(map[string]float64, len(cs.peak))}
		for k, v := range cs.sum {
			if cs.weight > 0 {
				v /= cs.weight
			}
			s.Mean[k] = v
		}
		for k, v := range cs.peak {
			s.Peak[k] = v
		}
		out = append(out, s)
	}
	return out
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// serverDefs are rowDefs, then the machine rows once more for the client
// machine, for when the server's machine is measured from afar
// (node_exporter) and the local one too.
var serverDefs = func() []rowDef {
	defs := append([]rowDef(nil), rowDefs...)
	for _, d := range rowDefs {
		if d.machine {
			defs = append(defs, rowDef{id: "client_" + d.id, label: "client machine: " + d.label, machine: true, value: d.value})
		}
	}
	return defs
}()

// serverSum accumulates the server table of a phase: each row's
// time-weighted sum and peak over the phase's intervals, and the server's
// CPU for the cost rows.
type serverSum struct {
	accs           []rowAcc // by serverDefs, made with the first interval
	costSum, costW float64
	costSource     string
}

type rowAcc struct {
	sum, w, peak float64
	n            int
	source       string
}

func (r *serverSum) add(iv *Interval) {
	if r.accs == nil {
		r.accs = make([]rowAcc, len(serverDefs))
		for i := range r.accs {
			r.accs[i].peak = math.Inf(-1)
		}
	}
	machine, process, _, local := pickSources(iv.Counters)
	for i, d := range serverDefs {
		src := process
		switch {
		case i >= len(rowDefs):
			src = -1
			if local != machine {
				src = local
			}
		case d.machine:
			src = machine
		}
		if src < 0 || !iv.Counters[src].Up {
			continue
		}
		v, ok := d.value(iv.Counters[src])
		if !ok {
			continue
		}
		a := &r.accs[i]
		a.sum += v * iv.DurationS
		a.w += iv.DurationS
		a.peak = max(a.peak, v)
		a.n++
		a.source = iv.Counters[src].Name
	}
	// Server CPU for the cost rows: the server process if read, else the
	// server's machine read through node_exporter; never this machine,
	// which runs the generator and whatever else (see serverCores).
	if cores, src, ok := serverCores(iv.Counters, machine, process); ok {
		r.costSum += cores * iv.DurationS
		r.costW += iv.DurationS
		r.costSource = src
	}
}

// rows computes the seed-named rows (mean and peak over the phase's
// intervals) and the cost rows of a phase.
func (r *serverSum) rows(total *ActionSummary, usersMean float64) []Row {
	var rows []Row
	for i, a := range r.accs {
		if a.n == 0 {
			continue
		}
		d := serverDefs[i]
		rows = append(rows, Row{ID: d.id, Label: d.label, Source: a.source, Mean: Num(a.sum / a.w), Peak: Num(a.peak)})
	}
	nan := Num(math.NaN())
	costSource := r.costSource
	if r.costW > 0 {
		cores := r.costSum / r.costW
		rows = append(rows, Row{ID: ServerCores, Label: "server CPU (cores)", Source: costSource, Mean: Num(cores), Peak: nan})
		if total.RatePerS > 0 {
			rows = append(rows, Row{ID: CPUMsPerAction, Label: "server CPU-ms per action", Source: costSource, Mean: Num(1000 * cores / total.RatePerS), Peak: nan})
		}
		if usersMean > 0 {
			rows = append(rows, Row{ID: CoresPer1000Users, Label: "server cores per 1,000 users", Source: costSource, Mean: Num(1000 * cores / usersMean), Peak: nan})
			if cores > 0.001 { // below a thousandth of a core the ratio is noise
				rows = append(rows, Row{ID: UsersPerCore, Label: "users per core at this latency", Source: costSource, Mean: Num(usersMean / cores), Peak: nan})
			}
		}
	}
	if total.RatePerS > 0 {
		for _, row := range rows {
			if !isNode(row.Source) {
				continue // this machine's traffic and disk are the generator's and others' too
			}
			switch row.ID {
			case "net_in_kbit":
				rows = append(rows, Row{ID: NetBytesPerAction, Label: "network bytes per action (in)", Source: row.Source, Mean: Num(float64(row.Mean) * 1000 / 8 / total.RatePerS), Peak: nan})
			case "disk_transfers":
				rows = append(rows, Row{ID: DiskTransfersPerAction, Label: "disk transfers per action", Source: row.Source, Mean: Num(float64(row.Mean) / total.RatePerS), Peak: nan})
			}
		}
	}
	return rows
}

// The cost rows: the server's CPU, and what it and its machine pay per
// unit of work (per action, per user).
const (
	ServerCores            = "server_cores"
	CPUMsPerAction         = "cpu_ms_per_action"
	CoresPer1000Users      = "cores_per_1000_users"
	UsersPerCore           = "users_per_core"
	NetBytesPerAction      = "net_bytes_per_action"
	DiskTransfersPerAction = "disk_transfers_per_action"
)

// costRowIDs are the cost rows' ids, in the order a summary holds them.
var costRowIDs = []string{ServerCores, CPUMsPerAction, CoresPer1000Users, UsersPerCore, NetBytesPerAction, DiskTransfersPerAction}

// ServerRowIDs lists the id of every row a summary's server table can
// hold: the counter rows, their copies for the client machine (client_…),
// and the cost rows. Whatever reads server rows by id (compare's
// directions) checks itself against this list.
func ServerRowIDs() []string {
	var out []string
	for _, d := range serverDefs {
		out = append(out, d.id)
	}
	return append(out, costRowIDs...)
}

// serverCores is the server's CPU in an interval, in cores, and where it
// was read: its process groups (summed) when they are read and all answered, else its
// machine when read through node_exporter. Nothing else measures the
// server: this machine's CPU less throng's own is other tenants' load too,
// and an embedded server's CPU is inside throng's (docs/results.md).
func serverCores(cs []sampler.SourceValues, machine, process int) (float64, string, bool) {
	cpu := func(v sampler.SourceValues, prefix string) (float64, bool) {
		u, ok1 := v.Sum(prefix + "user_seconds_total")
		s, ok2 := v.Sum(prefix + "system_seconds_total")
		return u + s, ok1 && ok2
	}
	if process >= 0 {
		// Every server process group read (--server-process given
		// several times: Dovecot and Postfix are one mail server), all of
		// them answering.
		var sum float64
		var names []string
		all := true
		for _, c := range cs {
			if !isProcess(c.Name) {
				continue
			}
			v, ok := cpu(c, "process_cpu_")
			if !c.Up || !ok {
				all = false
				break
			}
			sum += v
			names = append(names, c.Name)
		}
		if all {
			return sum, strings.Join(names, " + "), true
		}
	}
	if machine < 0 || !cs[machine].Up || !isNode(cs[machine].Name) {
		return 0, "", false
	}
	m := cs[machine]
	busy, ok := cpuPct("user", "nice", "system", "irq", "softirq", "steal")(m)
	if !ok {
		return 0, "", false
	}
	return busy / 100 * m.Values["cpus"], m.Name, true
}

// isNode reports whether a source reads a machine through node_exporter.
func isNode(name string) bool { return strings.HasPrefix(name, "node ") }

// Roots returns the processes a process source's selection matched (its
// process_root series) over the phase, by PID.
func (c *CounterSummary) Roots() []int {
	var out []int
	for k := range c.Peak {
		if v, ok := strings.CutPrefix(k, "process_root{pid="); ok {
			if pid, err := strconv.Atoi(strings.TrimSuffix(v, "}")); err == nil {
				out = append(out, pid)
			}
		}
	}
	sort.Ints(out)
	return out
}

// SortedKeys returns a map's keys in order, for stable output.
func SortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
