package sampler

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind says how a series behaves between two readings.
type Kind uint8

const (
	// Counter only grows (CPU seconds, bytes, faults): the sampler reports
	// its rate per second between two readings.
	Counter Kind = iota
	// Gauge is a level (memory, threads, load): reported as read.
	Gauge
)

// Point is one reading of one series.
//
// Names carry their unit and follow the same vocabulary for every source
// that reads a machine (local /proc or a node_exporter page), so a report
// row means the same whatever measured it:
//
//	cpu_<mode>_seconds_total          Counter  mode: user nice system iowait irq softirq steal idle; Labels "" (all CPUs) or "cpu=N"
//	cpus                              Gauge    CPUs online
//	context_switches_total            Counter
//	interrupts_total                  Counter
//	forks_total                       Counter
//	procs_running, procs_blocked      Gauge
//	load1, load5, load15              Gauge
//	memory_total_bytes, memory_available_bytes, memory_free_bytes,
//	memory_cached_bytes, memory_buffers_bytes, memory_used_bytes      Gauge  (used = total - available)
//	page_faults_total, major_page_faults_total                        Counter
//	pages_in_total, pages_out_total   Counter  (pgpgin/pgpgout, KiB paged)
//	swap_in_pages_total, swap_out_pages_total                         Counter
//	disk_reads_total, disk_writes_total,
//	disk_read_bytes_total, disk_written_bytes_total,
//	disk_io_seconds_total             Counter  Labels "dev=NAME" (whole disks, not partitions)
//	net_receive_bytes_total, net_transmit_bytes_total,
//	net_receive_packets_total, net_transmit_packets_total             Counter  Labels "if=NAME" (loopback included)
//	net_speed_bytes                   Gauge    Labels "if=NAME": the link's speed, bytes/s, where known (never loopback)
//
// A process group (a server and its children, or the generator itself):
//
//	process_cpu_user_seconds_total, process_cpu_system_seconds_total  Counter
//	process_voluntary_switches_total, process_involuntary_switches_total Counter
//	process_minor_faults_total, process_major_faults_total            Counter
//	process_read_bytes_total, process_write_bytes_total               Counter
//	process_rss_bytes, process_virtual_bytes                          Gauge
//	process_threads, process_fds, process_count                       Gauge
//	process_cpus                      Gauge    the CPUs its threads may run on (affinity)
//	process_cpu_quota_cores           Gauge    the most cores its CPU cgroups' quotas let it use (only under a quota)
//	process_cpu_throttled_seconds_total,
//	process_cpu_periods_total, process_cpu_throttled_periods_total    Counter  (only under a quota: see NewProcess)
type Point struct {
	Name   string
	Labels string
	Kind   Kind
	Value  float64
}

// Key is the series' name with its labels: "disk_reads_total{dev=vda}".
func (p Point) Key() string {
	if p.Labels == "" {
		return p.Name
	}
	return p.Name + "{" + p.Labels + "}"
}

// Source is one group of counters read once per interval. A source that
// fails returns an error: the sampler records it as down (up=0) for that
// interval and the load run goes on.
type Source interface {
	// Name identifies the source in results: "system", "process nginx",
	// "node http://10.0.0.5:9100/metrics", "generator".
	Name() string
	// Sample reads every series once and passes each to emit. It must
	// return soon after ctx ends.
	Sample(ctx context.Context, emit func(Point)) error
}

// Reading is every source read once.
type Reading struct {
	At      time.Time
	Sources []SourceReading
}

// SourceReading is one source read once.
type SourceReading struct {
	Name   string
	Up     bool
	Err    string
	Points []Point
}

// Sampler reads its sources together, each with a time limit, and turns two
// readings into rates. It is used by one goroutine.
type Sampler struct {
	sources []Source
	timeout time.Duration
}

// New returns a sampler of sources; each Sample call gives every source at
// most timeout (a source that takes longer is down for that reading).
func New(timeout time.Duration, sources ...Source) *Sampler {
	return &Sampler{sources: sources, timeout: timeout}
}

// Sources returns the sources' names, in order.
func (s *Sampler) Sources() []string {
	names := make([]string, len(s.sources))
	for i, src := range s.sources {
		names[i] = src.Name()
	}
	return names
}

// Sample reads every source concurrently and returns when all answered or
// their time is up.
func (s *Sampler) Sample(ctx context.Context) Reading {
	r := Reading{At: time.Now(), Sources: make([]SourceReading, len(s.sources))}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, src := range s.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr := &r.Sources[i]
			sr.Name = src.Name()
			done := make(chan error, 1)
			var mu sync.Mutex
			var pts []Point
			go func() {
				done <- src.Sample(ctx, func(p Point) {
					mu.Lock()
					pts = append(pts, p)
					mu.Unlock()
				})
			}()
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				err = fmt.Errorf("no answer within %s", s.timeout)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				sr.Err = err.Error()
				return
			}
			sr.Up, sr.Points = true, pts
		}()
	}
	wg.Wait()
	return r
}

// MinRateSpan is the shortest span over which counter rates are given: the
// kernel counts CPU time in ticks of 10 ms, so one tick over a few
// milliseconds would read as several cores. Over a shorter span (the last
// moments of a run) only gauges are given.
const MinRateSpan = 200 * time.Millisecond

// Rates turns two readings into one value per series and source: the rate
// per second of counters (negative differences — a counter reset, a process
// gone from a group — count as 0), the later value of gauges. A source down
// in either reading has Up false and no values. Over less than MinRateSpan,
// counters are left out.
func Rates(prev, cur Reading) []SourceValues {
	dt := cur.At.Sub(prev.At).Seconds()
	out := make([]SourceValues, len(cur.Sources))
	for i, c := range cur.Sources {
		sv := SourceValues{Name: c.Name, Up: c.Up, Err: c.Err}
		var p *SourceReading
		if i < len(prev.Sources) && prev.Sources[i].Name == c.Name {
			p = &prev.Sources[i]
		}
		if !c.Up || p == nil || !p.Up || dt <= 0 {
			sv.Up = false
			if sv.Err == "" && p != nil && !p.Up {
				sv.Err = "no earlier reading to take a rate from"
			}
			out[i] = sv
			continue
		}
		before := make(map[string]float64, len(p.Points))
		for _, pt := range p.Points {
			before[pt.Key()] = pt.Value
		}
		sv.Values = make(map[string]float64, len(c.Points))
		for _, pt := range c.Points {
			k := pt.Key()
			switch pt.Kind {
			case Gauge:
				sv.Values[k] = pt.Value
			case Counter:
				b, ok := before[k]
				if !ok || dt < MinRateSpan.Seconds() {
					continue // new series, or too short a span: no rate
				}
				sv.Values[k] = max(0, pt.Value-b) / dt
			}
		}
		out[i] = sv
	}
	return out
}

// SourceValues is one source's figures for one interval: rates per second
// of its counters and values of its gauges, by series key.
type SourceValues struct {
	Name   string             `json:"source"`
	Up     bool               `json:"up"`
	Err    string             `json:"error,omitempty"`
	Values map[string]float64 `json:"values,omitempty"`
}

// Keys returns the series keys of the values, sorted.
func (sv SourceValues) Keys() []string {
	keys := make([]string, 0, len(sv.Values))
	for k := range sv.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Sum adds the values of every series of a name, whatever their labels:
// Sum("disk_reads_total") adds every disk; Sum("cpu_user_seconds_total")
// takes only the all-CPU series (per-CPU series carry "cpu=" and are left
// out, so CPUs are not counted twice).
func (sv SourceValues) Sum(name string) (float64, bool) {
	total, found := 0.0, false
	for k, v := range sv.Values {
		if k == name {
			return v, true
		}
		if strings.HasPrefix(k, name+"{") && !strings.Contains(k, "{cpu=") {
			total += v
			found = true
		}
	}
	return total, found
}
