package sampler

// This file holds the "node" source: a remote machine read through its
// Prometheus node_exporter page.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const (
	// nodeMaxPage bounds the size of a node_exporter page (a default page
	// is about 60 KB).
	nodeMaxPage = 32 << 20
	// nodeClientTimeout bounds one request when the caller's ctx has no
	// earlier deadline.
	nodeClientTimeout = 30 * time.Second
)

// NewNode returns a source that reads a machine through the page of its
// Prometheus node_exporter at url (for example
// "http://10.0.0.5:9100/metrics"), named "node URL" (with any password in
// the URL masked). It emits the same machine series as NewSystem, under the
// same names and labels (see Point), from these families of the text
// exposition format 0.0.4:
//
//   - node_cpu_seconds_total{cpu,mode}: cpu_<mode>_seconds_total for each CPU
//     ("cpu=N") and summed over the CPUs (Labels ""); cpus is the number of
//     CPUs on the page;
//   - node_context_switches_total, node_intr_total, node_forks_total,
//     node_procs_running, node_procs_blocked, node_load1/5/15;
//   - node_memory_{MemTotal,MemAvailable,MemFree,Cached,Buffers}_bytes, and
//     memory_used_bytes = MemTotal - MemAvailable;
//   - node_vmstat_{pgfault,pgmajfault,pgpgin,pgpgout,pswpin,pswpout};
//   - node_disk_{reads_completed,writes_completed,read_bytes,written_bytes,
//     io_time_seconds}_total{device}, for whole disks: names starting with
//     loop, ram or zram are left out, and so is a name that looks like a
//     partition (sda1, nvme0n1p2) when its disk is on the page too;
//   - node_network_{receive,transmit}_{bytes,packets}_total{device}, every
//     device on the page (node_exporter leaves loopback out unless it runs
//     with --collector.netdev.device-exclude='^$'); and
//     node_network_speed_bytes{device} as net_speed_bytes where it is
//     positive (known).
//
// A series missing from the page is left out. Lines of other families are
// skipped unparsed; HELP, TYPE and comment lines, label order, escaped label
// values, exponents, optional timestamps and quoted metric names are
// handled, malformed lines and samples whose value is NaN or infinite are
// ignored.
//
// Each Sample is one GET, bounded by ctx (and by 30 s at most), without
// compression and through no proxy. It fails, and emits nothing, on a
// transport error (refused connection, timeout), an HTTP status other than
// 200, a page larger than 32 MiB or a page without node_cpu_seconds_total.
// Calls are serialised.
func NewNode(url string) Source {
	return &node{
		url:  url,
		name: "node " + redactURL(url),
		sem:  make(chan struct{}, 1),
		client: &http.Client{
			Timeout: nodeClientTimeout,
			Transport: &http.Transport{
				Proxy:               nil,
				DisableCompression:  true,
				MaxIdleConnsPerHost: 1,
				IdleConnTimeout:     90 * time.Second,
				TLSHandshakeTimeout: 10 * time.Second,
			},
		},
	}
}

// redactURL masks the password of u, if it has one.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

type node struct {
	url, name string
	sem       chan struct{}
	client    *http.Client
	body      bytes.Buffer
	page      nodePage
}

func (n *node) Name() string { return n.name }

func (n *node) Sample(ctx context.Context, emit func(Point)) error {
	if err := acquire(ctx, n.sem); err != nil {
		return err
	}
	defer func() { <-n.sem }()
	if err := n.fetch(ctx); err != nil {
		return err
	}
	if err := n.page.parse(n.body.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", redactURL(n.url), err)
	}
	n.page.emit(emit)
	return nil
}

func (n *node) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := n.client.Do(req)
	if err != nil {
		return err // *url.Error: holds the redacted URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: HTTP status %s", redactURL(n.url), resp.Status)
	}
	n.body.Reset()
	if n.body.Cap() > 4*nodeMaxPage/3 { // do not keep a huge buffer after a huge page
		n.body = bytes.Buffer{}
	}
	m, err := n.body.ReadFrom(io.LimitReader(resp.Body, nodeMaxPage+1))
	if err != nil {
		return fmt.Errorf("GET %s: reading the page: %w", redactURL(n.url), err)
	}
	if m > nodeMaxPage {
		return fmt.Errorf("GET %s: page larger than %d bytes", redactURL(n.url), nodeMaxPage)
	}
	return nil
}

// nodeScalars are the unlabelled families read, by index.
var nodeScalars = [...]struct {
	family, name string
	kind         Kind
}{
	{"node_context_switches_total", "context_switches_total", Counter},
	{"node_intr_total", "interrupts_total", Counter},
	{"node_forks_total", "forks_total", Counter},
	{"node_procs_running", "procs_running", Gauge},
	{"node_procs_blocked", "procs_blocked", Gauge},
	{"node_load1", "load1", Gauge},
	{"node_load5", "load5", Gauge},
	{"node_load15", "load15", Gauge},
	{"node_vmstat_pgfault", "page_faults_total", Counter},
	{"node_vmstat_pgmajfault", "major_page_faults_total", Counter},
	{"node_vmstat_pgpgin", "pages_in_total", Counter},
	{"node_vmstat_pgpgout", "pages_out_total", Counter},
	{"node_vmstat_pswpin", "swap_in_pages_total", Counter},
	{"node_vmstat_pswpout", "swap_out_pages_total", Counter},
	// The memory families come last: see nodePage.emit.
	{"node_memory_MemTotal_bytes", "memory_total_bytes", Gauge},
	{"node_memory_MemAvailable_bytes", "memory_available_bytes", Gauge},
	{"node_memory_MemFree_bytes", "memory_free_bytes", Gauge},
	{"node_memory_Cached_bytes", "memory_cached_bytes", Gauge},
	{"node_memory_Buffers_bytes", "memory_buffers_bytes", Gauge},
}

const (
	nsMemTotal = 14 + iota
	nsMemAvailable
	nsMemFree
	nsMemCached
	nsMemBuffers
	nScalars
)

// nodeDiskNames and nodeNetNames are the series of the labelled families,
// by index (see nodeFamily).
var (
	nodeDiskNames = [...]string{"disk_reads_total", "disk_writes_total", "disk_read_bytes_total",
		"disk_written_bytes_total", "disk_io_seconds_total"}
	nodeNetNames = [...]string{"net_receive_bytes_total", "net_receive_packets_total",
		"net_transmit_bytes_total", "net_transmit_packets_total", "net_speed_bytes"}
)

// nodeFamily classifies a metric name: the kind of family and its index.
func nodeFamily(name []byte) (kind byte, idx int) {
	switch string(name) {
	case "node_cpu_seconds_total":
		return 'c', 0
	case "node_disk_reads_completed_total":
		return 'd', 0
	case "node_disk_writes_completed_total":
		return 'd', 1
	case "node_disk_read_bytes_total":
		return 'd', 2
	case "node_disk_written_bytes_total":
		return 'd', 3
	case "node_disk_io_time_seconds_total":
		return 'd', 4
	case "node_network_receive_bytes_total":
		return 'n', 0
	case "node_network_receive_packets_total":
		return 'n', 1
	case "node_network_transmit_bytes_total":
		return 'n', 2
	case "node_network_transmit_packets_total":
		return 'n', 3
	case "node_network_speed_bytes":
		return 'n', 4
	}
	for i := range nodeScalars {
		if string(name) == nodeScalars[i].family {
			return 's', i
		}
	}
	return 0, 0
}

// cpuModeIndex returns the index in cpuModeNames of a mode label value.
func cpuModeIndex(mode []byte) int {
	switch string(mode) {
	case "user":
		return 0
	case "nice":
		return 1
	case "system":
		return 2
	case "idle":
		return 3
	case "iowait":
		return 4
	case "irq":
		return 5
	case "softirq":
		return 6
	case "steal":
		return 7
	}
	return -1
}

// nodePage is what one page gave. Its slices keep their capacity and their
// label strings from one parse to the next, so a steady page allocates
// nothing.
type nodePage struct {
	scalars [nScalars]float64
	have    [nScalars]bool
	cpus    []nodeEntry // v[0..7]: the modes
	disks   []nodeEntry // v[0..4]: nodeDiskNames
	nets    []nodeEntry // v[0..4]: nodeNetNames
}

type nodeEntry struct {
	raw    string // label value
	labels string // "cpu=N", "dev=NAME", "if=NAME"
	v      [8]float64
	have   uint8 // bit i: v[i] was read
}

// entry returns the entry for label value val in *list, adding it if new.
func entry(list *[]nodeEntry, prefix string, val []byte) *nodeEntry {
	l := *list
	for i := range l {
		if l[i].raw == string(val) {
			return &l[i]
		}
	}
	n := len(l)
	if n < cap(l) {
		l = l[:n+1]
		if l[n].labels == "" || l[n].raw != string(val) {
			l[n].raw = string(val)
			l[n].labels = prefix + l[n].raw
		}
		l[n].v, l[n].have = [8]float64{}, 0
	} else {
		raw := string(val)
		l = append(l, nodeEntry{raw: raw, labels: prefix + raw})
	}
	*list = l
	return &l[n]
}

// parse reads a page in the text exposition format, keeping the needed
// families. It fails when the page has no node_cpu_seconds_total sample.
func (p *nodePage) parse(b []byte) error {
	p.have = [nScalars]bool{}
	p.cpus, p.disks, p.nets = p.cpus[:0], p.disks[:0], p.nets[:0]
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		name, labels, rest, ok := splitSample(line)
		if !ok || len(name) < 5 || string(name[:5]) != "node_" {
			continue
		}
		kind, idx := nodeFamily(name)
		if kind == 0 {
			continue
		}
		tok, _ := field(rest, 0)
		v, err := strconv.ParseFloat(string(tok), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		switch kind {
		case 's':
			p.scalars[idx], p.have[idx] = v, true
		case 'c':
			cpu, mode := labelValues(labels, "cpu", "mode")
			m := cpuModeIndex(mode)
			if len(cpu) == 0 || m < 0 {
				continue
			}
			e := entry(&p.cpus, "cpu=", cpu)
			e.v[m], e.have = v, e.have|1<<m
		case 'd', 'n':
			dev, _ := labelValues(labels, "device", "")
			if len(dev) == 0 {
				continue
			}
			list, prefix := &p.disks, "dev="
			if kind == 'n' {
				list, prefix = &p.nets, "if="
			}
			e := entry(list, prefix, dev)
			e.v[idx], e.have = v, e.have|1<<idx
		}
	}
	if len(p.cpus) == 0 {
		return errors.New("the page has no node_cpu_seconds_total")
	}
	return nil
}

// emit emits the series of the last page parsed.
func (p *nodePage) emit(emit func(Point)) {
	var sum [8]float64
	var have uint8
	for i := range p.cpus {
		c := &p.cpus[i]
		for m := range cpuModeNames {
			if c.have&(1<<m) != 0 {
				emit(Point{Name: cpuModeNames[m], Labels: c.labels, Kind: Counter, Value: c.v[m]})
				sum[m] += c.v[m]
			}
		}
		have |= c.have
	}
	for m := range cpuModeNames {
		if have&(1<<m) != 0 {
			emit(Point{Name: cpuModeNames[m], Kind: Counter, Value: sum[m]})
		}
	}
	emit(Point{Name: "cpus", Kind: Gauge, Value: float64(len(p.cpus))})
	for i := range nsMemTotal {
		if p.have[i] {
			emit(Point{Name: nodeScalars[i].name, Kind: nodeScalars[i].kind, Value: p.scalars[i]})
		}
	}
	if p.have[nsMemTotal] && p.have[nsMemFree] {
		avail := p.scalars[nsMemAvailable]
		if !p.have[nsMemAvailable] { // as NewSystem does before Linux 3.14
			avail = p.scalars[nsMemFree] + p.scalars[nsMemBuffers] + p.scalars[nsMemCached]
		}
		emit(Point{Name: "memory_total_bytes", Kind: Gauge, Value: p.scalars[nsMemTotal]})
		emit(Point{Name: "memory_available_bytes", Kind: Gauge, Value: avail})
		emit(Point{Name: "memory_free_bytes", Kind: Gauge, Value: p.scalars[nsMemFree]})
		if p.have[nsMemCached] {
			emit(Point{Name: "memory_cached_bytes", Kind: Gauge, Value: p.scalars[nsMemCached]})
		}
		if p.have[nsMemBuffers] {
			emit(Point{Name: "memory_buffers_bytes", Kind: Gauge, Value: p.scalars[nsMemBuffers]})
		}
		emit(Point{Name: "memory_used_bytes", Kind: Gauge, Value: p.scalars[nsMemTotal] - avail})
	}
	for i := range p.disks {
		d := &p.disks[i]
		if excludedDisk(d.raw) || p.hasDisk(diskParent(d.raw)) {
			continue
		}
		for k, name := range nodeDiskNames {
			if d.have&(1<<k) != 0 {
				emit(Point{Name: name, Labels: d.labels, Kind: Counter, Value: d.v[k]})
			}
		}
	}
	for i := range p.nets {
		d := &p.nets[i]
		for k, name := range nodeNetNames {
			switch {
			case d.have&(1<<k) == 0:
			case name == "net_speed_bytes":
				if d.v[k] > 0 { // node_exporter writes -125000 (-1 Mbit/s) for unknown
					emit(Point{Name: name, Labels: d.labels, Kind: Gauge, Value: d.v[k]})
				}
			default:
				emit(Point{Name: name, Labels: d.labels, Kind: Counter, Value: d.v[k]})
			}
		}
	}
}

func (p *nodePage) hasDisk(name string) bool {
	if name == "" {
		return false
	}
	for i := range p.disks {
		if p.disks[i].raw == name {
			return true
		}
	}
	return false
}

// splitSample splits a sample line of the text format into the metric
// name, the inside of its braces (nil without labels) and the rest (value
// and optional timestamp). Blank, comment (#) and malformed lines give
// ok false. A name may also stand quoted inside the braces
// ({"name",label="v"}), as in the newer escaping schemes.
func splitSample(line []byte) (name, labels, rest []byte, ok bool) {
	i := 0
	for i < len(line) && isBlank(line[i]) {
		i++
	}
	if i == len(line) || line[i] == '#' {
		return nil, nil, nil, false
	}
	if line[i] != '{' {
		j := i
		for j < len(line) && !isBlank(line[j]) && line[j] != '{' {
			j++
		}
		name = line[i:j]
		for j < len(line) && isBlank(line[j]) {
			j++
		}
		if j < len(line) && line[j] == '{' {
			end := closingBrace(line, j)
			if end < 0 {
				return nil, nil, nil, false
			}
			labels, j = line[j+1:end], end+1
		}
		return name, labels, line[j:], len(name) > 0
	}
	end := closingBrace(line, i)
	if end < 0 {
		return nil, nil, nil, false
	}
	rest = line[end+1:]
	// The first element, a quoted string not followed by '=', is the name.
	k := i + 1
	for k < end && isBlank(line[k]) {
		k++
	}
	if k == end || line[k] != '"' {
		return nil, nil, nil, false
	}
	q, after, ok := quoted(line[:end], k)
	if !ok {
		return nil, nil, nil, false
	}
	for after < end && isBlank(line[after]) {
		after++
	}
	if after < end && line[after] == '=' {
		return nil, nil, nil, false // a quoted label name: no metric name
	}
	return q, line[after:end], rest, len(q) > 0
}

// closingBrace returns the index of the '}' that closes the '{' at
// line[open], skipping quoted strings, or -1.
func closingBrace(line []byte, open int) int {
	inQuote := false
	for i := open + 1; i < len(line); i++ {
		switch c := line[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i
		}
	}
	return -1
}

// quoted reads the quoted string that starts at b[i] == '"' and returns its
// unescaped value (\\, \" and \n; a new slice only when it has escapes) and
// the index after the closing quote.
func quoted(b []byte, i int) (val []byte, next int, ok bool) {
	start := i + 1
	escaped := false
	for j := start; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return b[start:j], j + 1, true
			}
			return unescape(b[start:j]), j + 1, true
		}
	}
	return nil, len(b), false
}

func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' && i+1 < len(b) {
			i++
			switch b[i] {
			case 'n':
				c = '\n'
			default: // \\, \" and anything else: the character itself
				c = b[i]
			}
		}
		out = append(out, c)
	}
	return out
}

// labelValues returns the values of labels a and b ("" for none) in the
// inside of a label set's braces, nil for one that is missing. It gives up
// (returning what it found so far) at a malformed label.
func labelValues(labels []byte, a, b string) (va, vb []byte) {
	i := 0
	for i < len(labels) {
		for i < len(labels) && (isBlank(labels[i]) || labels[i] == ',') {
			i++
		}
		if i == len(labels) {
			break
		}
		var name []byte
		if labels[i] == '"' {
			var ok bool
			if name, i, ok = quoted(labels, i); !ok {
				return va, vb
			}
		} else {
			j := i
			for j < len(labels) && !isBlank(labels[j]) && labels[j] != '=' && labels[j] != ',' {
				j++
			}
			name, i = labels[i:j], j
		}
		for i < len(labels) && isBlank(labels[i]) {
			i++
		}
		if i == len(labels) || labels[i] != '=' {
			continue // a bare quoted name ({"metric",...}) or junk: skip it
		}
		i++
		for i < len(labels) && isBlank(labels[i]) {
			i++
		}
		if i == len(labels) || labels[i] != '"' {
			return va, vb
		}
		val, next, ok := quoted(labels, i)
		if !ok {
			return va, vb
		}
		i = next
		switch {
		case string(name) == a:
			va = val
		case b != "" && string(name) == b:
			vb = val
		}
	}
	return va, vb
}
