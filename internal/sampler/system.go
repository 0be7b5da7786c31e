package sampler

// This file holds the "system" source (the local machine from /proc and
// /sys) and the small allocation-free readers that the process and generator
// sources share with it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of the tick counts in /proc/stat and /proc/PID/stat:
// USER_HZ, which Linux fixes at 100 for every user-space interface.
const userHZ = 100

// cpuModeNames are the series of the CPU modes, in the order of the columns
// of the "cpu" lines of /proc/stat (guest and guest_nice, the two columns
// after steal, are already counted inside user and nice).
var cpuModeNames = [8]string{
	"cpu_user_seconds_total",
	"cpu_nice_seconds_total",
	"cpu_system_seconds_total",
	"cpu_idle_seconds_total",
	"cpu_iowait_seconds_total",
	"cpu_irq_seconds_total",
	"cpu_softirq_seconds_total",
	"cpu_steal_seconds_total",
}

// NewSystem returns the source "system": the machine this process runs on,
// read from the files of /proc and /sys under root. root is "/" normally (""
// means "/"); tests pass a directory holding a copy of the few files read.
// Every Sample reads, and emits the series of the vocabulary documented on
// Point from:
//
//   - proc/stat: cpu_<mode>_seconds_total for all CPUs (Labels "") and for
//     each CPU ("cpu=N"), in seconds (ticks / USER_HZ); cpus (the number of
//     cpuN lines: CPUs online); context_switches_total (ctxt),
//     interrupts_total (first field of intr), forks_total (processes),
//     procs_running, procs_blocked;
//   - proc/loadavg: load1, load5, load15;
//   - proc/meminfo: memory_{total,available,free,cached,buffers,used}_bytes
//     (MemTotal, MemAvailable, MemFree, Cached, Buffers; used = MemTotal -
//     MemAvailable; without MemAvailable, before Linux 3.14, available is
//     taken as MemFree + Buffers + Cached);
//   - proc/vmstat: page_faults_total (pgfault), major_page_faults_total
//     (pgmajfault), pages_in_total, pages_out_total (pgpgin, pgpgout),
//     swap_in_pages_total, swap_out_pages_total (pswpin, pswpout);
//   - proc/diskstats, for whole disks only (see below): disk_reads_total,
//     disk_writes_total (requests completed), disk_read_bytes_total,
//     disk_written_bytes_total (sectors × 512), disk_io_seconds_total (time
//     with I/O in flight), Labels "dev=NAME";
//   - proc/net/dev, every interface including loopback:
//     net_{receive,transmit}_{bytes,packets}_total, Labels "if=NAME";
//     and net_speed_bytes, the link's speed in bytes per second, from
//     sys/class/net/NAME/speed (Mbit/s, read again every 64 samples) for
//     the interfaces whose speed is known (not loopback, nor most virtual
//     interfaces, which report none or -1).
//
// A whole disk is a diskstats device listed in sys/block whose name does not
// start with loop, ram or zram (device-mapper dm-N and md devices are kept;
// partitions are not in sys/block). Where sys/block cannot be read, the
// names decide: a name that looks like a partition (sda1, nvme0n1p2) is left
// out when the disk it belongs to is present.
//
// Sample fails when proc/stat or proc/meminfo cannot be read or parsed; the
// other files are optional and their series are left out while unreadable.
// The source reuses its buffers from one Sample to the next (it allocates
// almost nothing in the steady state) and may be called from several
// goroutines: calls are serialised, and a call waiting for an earlier one
// gives up when its ctx ends.
func NewSystem(root string) Source {
	if root == "" {
		root = "/"
	}
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return &system{
		root:      root,
		sem:       make(chan struct{}, 1),
		pStat:     cpath(root + "proc/stat"),
		pLoad:     cpath(root + "proc/loadavg"),
		pMem:      cpath(root + "proc/meminfo"),
		pVM:       cpath(root + "proc/vmstat"),
		pDisk:     cpath(root + "proc/diskstats"),
		pNet:      cpath(root + "proc/net/dev"),
		devLabels: make(map[string]string),
		ifLabels:  make(map[string]string),
		whole:     make(map[string]bool),
	}
}

type system struct {
	root                                 string
	sem                                  chan struct{} // serialises Sample: the buffers below are reused
	pStat, pLoad, pMem, pVM, pDisk, pNet []byte        // NUL-terminated paths
	buf                                  []byte
	cpuLabels                            []string            // "cpu=N" by N
	devLabels, ifLabels                  map[string]string   // "dev=NAME", "if=NAME" by NAME
	whole                                map[string]bool     // diskstats name → is a whole disk (from sys/block)
	names                                map[string]bool     // fallback without sys/block: names present
	speeds                               map[string]*ifSpeed // by interface NAME
	sbuf                                 []byte              // the speed files' contents (buf holds proc/net/dev's meanwhile)
	noSysBlock                           bool                // sys/block could not be read when whole was last reset
	checkedSysBlock                      bool
}

func (s *system) Name() string { return "system" }

func (s *system) Sample(ctx context.Context, emit func(Point)) error {
	if err := acquire(ctx, s.sem); err != nil {
		return err
	}
	defer func() { <-s.sem }()
	if err := s.readStat(emit); err != nil {
		return err
	}
	if err := s.readMeminfo(emit); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.readLoadavg(emit)
	s.readVmstat(emit)
	if err := ctx.Err(); err != nil {
		return err
	}
	s.readDiskstats(emit)
	s.readNetDev(emit)
	return nil
}

// acquire takes the one slot of sem, or gives up when ctx ends.
func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("an earlier reading is still running: %w", context.Cause(ctx))
	}
}

func (s *system) readStat(emit func(Point)) error {
	b, err := readFileAt(unix.AT_FDCWD, s.pStat, &s.buf)
	if err != nil {
		return err
	}
	cpus, sawCPU := 0, false
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, i := field(line, 0)
		switch {
		case len(key) >= 3 && string(key[:3]) == "cpu":
			labels := ""
			if len(key) > 3 {
				n, ok := parseUint(key[3:])
				if !ok || n > 1<<20 {
					continue
				}
				labels = s.cpuLabel(int(n))
				cpus++
			} else {
				sawCPU = true
			}
			for m := range cpuModeNames {
				var f []byte
				f, i = field(line, i)
				v, ok := parseUint(f)
				if !ok {
					break
				}
				emit(Point{Name: cpuModeNames[m], Labels: labels, Kind: Counter, Value: float64(v) / userHZ})
			}
		case string(key) == "ctxt":
			emitUintField(emit, "context_switches_total", Counter, line, i)
		case string(key) == "intr":
			emitUintField(emit, "interrupts_total", Counter, line, i)
		case string(key) == "processes":
			emitUintField(emit, "forks_total", Counter, line, i)
		case string(key) == "procs_running":
			emitUintField(emit, "procs_running", Gauge, line, i)
		case string(key) == "procs_blocked":
			emitUintField(emit, "procs_blocked", Gauge, line, i)
		}
	}
	if !sawCPU {
		return fmt.Errorf("%s: no \"cpu\" line", pathString(s.pStat))
	}
	emit(Point{Name: "cpus", Kind: Gauge, Value: float64(cpus)})
	return nil
}

// emitUintField emits the unsigned integer that starts at line[i:] (after
// blanks), if there is one.
func emitUintField(emit func(Point), name string, kind Kind, line []byte, i int) {
	f, _ := field(line, i)
	if v, ok := parseUint(f); ok {
		emit(Point{Name: name, Kind: kind, Value: float64(v)})
	}
}

func (s *system) cpuLabel(n int) string {
	for len(s.cpuLabels) <= n {
		s.cpuLabels = append(s.cpuLabels, "cpu="+strconv.Itoa(len(s.cpuLabels)))
	}
	return s.cpuLabels[n]
}

func (s *system) readLoadavg(emit func(Point)) {
	b, err := readFileAt(unix.AT_FDCWD, s.pLoad, &s.buf)
	if err != nil {
		return
	}
	i := 0
	for _, name := range [...]string{"load1", "load5", "load15"} {
		var f []byte
		f, i = field(b, i)
		v, ok := parseDecimal(f)
		if !ok {
			return
		}
		emit(Point{Name: name, Kind: Gauge, Value: v})
	}
}

func (s *system) readMeminfo(emit func(Point)) error {
	b, err := readFileAt(unix.AT_FDCWD, s.pMem, &s.buf)
	if err != nil {
		return err
	}
	const (
		total = iota
		avail
		free
		cached
		buffers
		nFields
	)
	var v [nFields]float64
	var have [nFields]bool
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		colon := indexByte(line, ':')
		if colon < 0 {
			continue
		}
		k := -1
		switch string(line[:colon]) {
		case "MemTotal":
			k = total
		case "MemAvailable":
			k = avail
		case "MemFree":
			k = free
		case "Cached":
			k = cached
		case "Buffers":
			k = buffers
		}
		if k < 0 {
			continue
		}
		f, i := field(line, colon+1)
		n, ok := parseUint(f)
		if !ok {
			continue
		}
		v[k] = float64(n)
		if unit, _ := field(line, i); string(unit) == "kB" {
			v[k] *= 1024
		}
		have[k] = true
	}
	if !have[total] || !have[free] {
		return fmt.Errorf("%s: no MemTotal or MemFree", pathString(s.pMem))
	}
	if !have[avail] {
		v[avail] = v[free] + v[buffers] + v[cached]
	}
	emit(Point{Name: "memory_total_bytes", Kind: Gauge, Value: v[total]})
	emit(Point{Name: "memory_available_bytes", Kind: Gauge, Value: v[avail]})
	emit(Point{Name: "memory_free_bytes", Kind: Gauge, Value: v[free]})
	if have[cached] {
		emit(Point{Name: "memory_cached_bytes", Kind: Gauge, Value: v[cached]})
	}
	if have[buffers] {
		emit(Point{Name: "memory_buffers_bytes", Kind: Gauge, Value: v[buffers]})
	}
	emit(Point{Name: "memory_used_bytes", Kind: Gauge, Value: v[total] - v[avail]})
	return nil
}

func (s *system) readVmstat(emit func(Point)) {
	b, err := readFileAt(unix.AT_FDCWD, s.pVM, &s.buf)
	if err != nil {
		return
	}
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, i := field(line, 0)
		var name string
		switch string(key) {
		case "pgfault":
			name = "page_faults_total"
		case "pgmajfault":
			name = "major_page_faults_total"
		case "pgpgin":
			name = "pages_in_total"
		case "pgpgout":
			name = "pages_out_total"
		case "pswpin":
			name = "swap_in_pages_total"
		case "pswpout":
			name = "swap_out_pages_total"
		default:
			continue
		}
		emitUintField(emit, name, Counter, line, i)
	}
}

// excludedDisk reports whether a block device name is one that is never a
// disk of interest: loop devices, RAM disks and compressed-RAM swap.
func excludedDisk(name string) bool {
	return strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram")
}

// diskParent returns the disk that a partition name belongs to, judged by
// the name only: "sda1" → "sda", "nvme0n1p2" → "nvme0n1", "mmcblk0p1" →
// "mmcblk0". It returns "" for a name that does not end in digits. The
// result is only a candidate: "nvme0n1" gives "nvme0n", which is no disk.
func diskParent(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return ""
	}
	p := name[:i]
	if len(p) >= 3 && p[len(p)-1] == 'p' && p[len(p)-2] >= '0' && p[len(p)-2] <= '9' {
		return p[:len(p)-1]
	}
	return p
}

// isWholeDisk decides whether the diskstats device name is a whole disk
// (see NewSystem). Decisions taken from sys/block are cached by name.
func (s *system) isWholeDisk(name []byte) bool {
	if v, ok := s.whole[string(name)]; ok {
		return v
	}
	n := string(name)
	if excludedDisk(n) {
		s.whole[n] = false
		return false
	}
	if len(s.whole) > 4096 { // devices come and go: start over now and then
		clear(s.whole)
		s.checkedSysBlock = false
	}
	if !s.checkedSysBlock {
		_, err := os.Stat(s.root + "sys/block")
		s.noSysBlock = err != nil
		s.checkedSysBlock = true
	}
	if s.noSysBlock {
		// Decided per sample by the names present (not cached).
		if p := diskParent(n); p != "" && s.names[p] {
			return false
		}
		return true
	}
	_, err := os.Stat(s.root + "sys/block/" + n)
	s.whole[n] = err == nil
	return err == nil
}

// diskstats columns after the name (0-based): reads completed, reads merged,
// sectors read, ms reading, writes completed, writes merged, sectors
// written, ms writing, I/Os in flight, ms doing I/O, ...
func (s *system) readDiskstats(emit func(Point)) {
	b, err := readFileAt(unix.AT_FDCWD, s.pDisk, &s.buf)
	if err != nil {
		return
	}
	if s.noSysBlock || !s.checkedSysBlock {
		// Names present, for the fallback without sys/block.
		if s.names == nil {
			s.names = make(map[string]bool)
		}
		clear(s.names)
		for rest := b; len(rest) > 0; {
			var line []byte
			line, rest = cutLine(rest)
			_, i := field(line, 0)
			_, i = field(line, i)
			name, _ := field(line, i)
			if len(name) > 0 {
				s.names[string(name)] = true
			}
		}
	}
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		_, i := field(line, 0) // major
		_, i = field(line, i)  // minor
		var name []byte
		name, i = field(line, i)
		if len(name) == 0 || !s.isWholeDisk(name) {
			continue
		}
		var col [10]uint64
		ok := true
		for k := range col {
			var f []byte
			f, i = field(line, i)
			if col[k], ok = parseUint(f); !ok {
				break
			}
		}
		if !ok {
			continue
		}
		labels := cachedLabel(s.devLabels, "dev=", name)
		emit(Point{Name: "disk_reads_total", Labels: labels, Kind: Counter, Value: float64(col[0])})
		emit(Point{Name: "disk_writes_total", Labels: labels, Kind: Counter, Value: float64(col[4])})
		emit(Point{Name: "disk_read_bytes_total", Labels: labels, Kind: Counter, Value: float64(col[2]) * 512})
		emit(Point{Name: "disk_written_bytes_total", Labels: labels, Kind: Counter, Value: float64(col[6]) * 512})
		emit(Point{Name: "disk_io_seconds_total", Labels: labels, Kind: Counter, Value: float64(col[9]) / 1000})
	}
}

// /proc/net/dev: two header lines, then "NAME: 8 receive columns, 8
// transmit columns" (bytes and packets first in each half). A long name may
// touch its colon and a large first number: "eth0:123".
func (s *system) readNetDev(emit func(Point)) {
	b, err := readFileAt(unix.AT_FDCWD, s.pNet, &s.buf)
	if err != nil {
		return
	}
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		colon := indexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := trimBlanks(line[:colon])
		if len(name) == 0 || indexByte(name, '|') >= 0 {
			continue
		}
		var col [10]uint64
		ok := true
		i := colon + 1
		for k := range col {
			var f []byte
			f, i = field(line, i)
			if col[k], ok = parseUint(f); !ok {
				break
			}
		}
		if !ok {
			continue
		}
		labels := cachedLabel(s.ifLabels, "if=", name)
		emit(Point{Name: "net_receive_bytes_total", Labels: labels, Kind: Counter, Value: float64(col[0])})
		emit(Point{Name: "net_receive_packets_total", Labels: labels, Kind: Counter, Value: float64(col[1])})
		emit(Point{Name: "net_transmit_bytes_total", Labels: labels, Kind: Counter, Value: float64(col[8])})
		emit(Point{Name: "net_transmit_packets_total", Labels: labels, Kind: Counter, Value: float64(col[9])})
		if mbit := s.linkSpeed(name); mbit > 0 {
			emit(Point{Name: "net_speed_bytes", Labels: labels, Kind: Gauge, Value: float64(mbit) * 1e6 / 8})
		}
	}
}

// speedEvery is how many samples an interface's link speed is kept before
// its file is read again: a speed changes rarely (a renegotiation), and
// most interfaces have none to read (the failed read would allocate).
const speedEvery = 64

// ifSpeed is an interface's speed file and the speed it last gave.
type ifSpeed struct {
	path []byte // NUL-terminated
	mbit uint64 // 0: unknown
	age  int    // samples since it was read
}

// linkSpeed returns an interface's speed in Mbit/s from
// sys/class/net/NAME/speed, read again every speedEvery samples; 0 when
// unknown (no file, loopback's EINVAL, -1). The cache is emptied past 4096
// names, as cachedLabel's.
func (s *system) linkSpeed(name []byte) uint64 {
	sp := s.speeds[string(name)]
	if sp == nil {
		if s.speeds == nil || len(s.speeds) >= 4096 {
			s.speeds = make(map[string]*ifSpeed)
		}
		sp = &ifSpeed{path: cpath(s.root + "sys/class/net/" + string(name) + "/speed")}
		s.speeds[string(name)] = sp
	}
	if sp.age%speedEvery == 0 {
		sp.mbit = 0
		if b, err := readFileAt(unix.AT_FDCWD, sp.path, &s.sbuf); err == nil {
			if v, ok := parseUint(trimBlanks(b)); ok {
				sp.mbit = v
			}
		}
	}
	sp.age++
	return sp.mbit
}

// cachedLabel returns prefix+name, built once per name (the map is emptied
// when it grows past 4096 names, e.g. with short-lived virtual interfaces).
func cachedLabel(m map[string]string, prefix string, name []byte) string {
	if l, ok := m[string(name)]; ok {
		return l
	}
	if len(m) >= 4096 {
		clear(m)
	}
	l := prefix + string(name)
	m[l[len(prefix):]] = l
	return l
}

// ---- allocation-free file reading and byte parsing, shared by the sources

// cpath returns p as a NUL-terminated byte slice for openat.
func cpath(p string) []byte {
	b := make([]byte, len(p)+1)
	copy(b, p)
	return b
}

// pathString returns a path made by cpath (or appendPath) as a string, for
// error messages.
func pathString(p []byte) string {
	if n := len(p); n > 0 && p[n-1] == 0 {
		p = p[:n-1]
	}
	return string(p)
}

// openAt opens the NUL-terminated path (relative to dirfd unless absolute)
// read-only, retrying on EINTR.
func openAt(dirfd int, path []byte, flags int) (int, error) {
	for {
		r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
			uintptr(flags|unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}

// readFileAt reads the whole NUL-terminated path (relative to dirfd) into
// *buf, growing it as needed, and returns the content (valid until the next
// use of buf). Errors are *os.PathError.
func readFileAt(dirfd int, path []byte, buf *[]byte) ([]byte, error) {
	return readAt(dirfd, path, buf, false)
}

// readRecordAt is readFileAt for the files of /proc/PID that the kernel
// makes in one piece (stat, status, io): a read that fills less than the
// room it was given returned the whole file, which saves the read that would
// only report its end. (Files made of many records, like /proc/net/dev, may
// return less than the room given before their end: they are read with
// readFileAt.)
func readRecordAt(dirfd int, path []byte, buf *[]byte) ([]byte, error) {
	return readAt(dirfd, path, buf, true)
}

func readAt(dirfd int, path []byte, buf *[]byte, oneRecord bool) ([]byte, error) {
	fd, err := openAt(dirfd, path, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: pathString(path), Err: err}
	}
	b, err := readAll(fd, buf, oneRecord)
	unix.Close(fd)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: pathString(path), Err: err}
	}
	return b, nil
}

// readAll reads fd to its end into *buf; with oneRecord, a first read that
// leaves room in the buffer is taken as the whole file.
func readAll(fd int, buf *[]byte, oneRecord bool) ([]byte, error) {
	b := (*buf)[:0]
	if cap(b) < 4096 {
		b = make([]byte, 0, 4096)
	}
	if oneRecord {
		for {
			n, err := unix.Read(fd, b[:cap(b)])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				*buf = b
				return nil, err
			}
			b = b[:max(n, 0)]
			break
		}
		if len(b) < cap(b) {
			*buf = b
			return b, nil
		}
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			*buf = b
			return nil, err
		}
		if n <= 0 {
			break
		}
		b = b[:len(b)+n]
	}
	*buf = b
	return b, nil
}

// errNotDir is returned by eachDirent for a path that is no directory.
var errNotDir = errors.New("not a directory")

// eachDirent calls f with the inode number and the name of every entry of
// the directory open as fd except "." and "..", reading with buf (which it
// may grow). The name is valid only during the call.
func eachDirent(fd int, buf *[]byte, f func(ino uint64, name []byte)) error {
	if cap(*buf) < 8192 {
		*buf = make([]byte, 8192)
	}
	b := (*buf)[:cap(*buf)]
	for {
		n, err := unix.Getdents(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.ENOTDIR {
				return errNotDir
			}
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		for off := 0; off+19 < n; {
			ino := *(*uint64)(unsafe.Pointer(&b[off]))
			reclen := int(*(*uint16)(unsafe.Pointer(&b[off+16])))
			if reclen <= 19 || off+reclen > n {
				break
			}
			name := b[off+19 : off+reclen]
			if z := indexByte(name, 0); z >= 0 {
				name = name[:z]
			}
			off += reclen
			if (len(name) == 1 && name[0] == '.') || (len(name) == 2 && name[0] == '.' && name[1] == '.') {
				continue
			}
			f(ino, name)
		}
	}
}

// cutLine splits b at its first newline.
func cutLine(b []byte) (line, rest []byte) {
	if i := indexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// field returns the blank-separated token of line that starts at or after
// i, and the index just after it (nil at the end of the line).
func field(line []byte, i int) ([]byte, int) {
	for i < len(line) && isBlank(line[i]) {
		i++
	}
	j := i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	if j == i {
		return nil, j
	}
	return line[i:j], j
}

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// parseUint parses a non-empty run of decimal digits (no sign); it fails on
// anything else and on overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseDecimal parses "123" or "123.45" cheaply and anything else with
// strconv.ParseFloat.
func parseDecimal(b []byte) (float64, bool) {
	dot := indexByte(b, '.')
	if dot < 0 {
		n, ok := parseUint(b)
		return float64(n), ok
	}
	ip, ok1 := parseUint(b[:dot])
	fp, ok2 := parseUint(b[dot+1:])
	if ok1 && ok2 && len(b)-dot-1 <= 9 {
		scale := 1.0
		for range len(b) - dot - 1 {
			scale *= 10
		}
		return float64(ip) + float64(fp)/scale, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}
