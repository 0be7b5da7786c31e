package sampler

// This file holds the "process" source: a server's process group read from
// /proc.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ProcessSelector chooses the root processes of a process source. Every
// field that is set adds roots (their union is the selection); at least one
// must be set.
type ProcessSelector struct {
	// PID selects the process with this ID.
	PID int
	// Name selects every process whose command name (/proc/PID/comm, at
	// most 15 bytes) or whose base name of argv[0] (from /proc/PID/cmdline)
	// equals Name exactly.
	Name string
	// PIDFile selects the process whose ID is the first word of this file,
	// re-read at every sample (a restarted server rewrites it).
	PIDFile string
}

// NewProcess returns a source that reads a server as one group: the
// processes chosen by sel and all their descendants (nginx, dovecot,
// postfix and smbd fork workers). The group is found anew at every Sample
// by walking /proc and the parent of each process (/proc/PID/stat), so a
// server that restarted under a new PID, or that forked new workers, is
// followed. To keep this cheap on machines with many processes, when the
// roots are chosen by PID or pid file and are the same processes as at the
// last Sample, a process found outside the group then is not read again
// while its /proc/PID directory keeps its inode number (a new process under
// a reused PID gets a new one): it cannot have come in, since a process's
// parent only changes when that parent exits. Roots chosen by Name are
// looked for in every process at every Sample (a process may exec into the
// name). Zombies are never roots; a zombie member still counts for CPU time
// and faults (they move to its parent when it is reaped) but not for the
// gauges.
//
// The generator is never counted: this process (os.Getpid(), and its
// threads) is never a root nor a member, nor is a process it started
// unless that process was chosen by PID or pid file itself (a test's
// server); a name that matches nothing but this process and its children
// is an error wrapping ErrGenerator ("--server-process throng" would
// otherwise measure the load generator as the server).
//
// The source is named "process NAME", "process PID" or "process pidfile
// PATH" (the parts of several set fields are joined by spaces). It emits the
// process series of the vocabulary documented on Point, summed over the live
// members, and process_root{pid=N} (1) for each root, so a result says which
// processes a name matched:
//
//   - process_cpu_user_seconds_total, process_cpu_system_seconds_total:
//     utime+cutime and stime+cstime from /proc/PID/stat, so the CPU time of
//     children that exited and were reaped by a member stays counted;
//   - process_minor_faults_total, process_major_faults_total: minflt+cminflt
//     and majflt+cmajflt, likewise;
//   - process_voluntary_switches_total, process_involuntary_switches_total:
//     voluntary_ctxt_switches and nonvoluntary_ctxt_switches of every thread
//     (/proc/PID/task/TID/status), counting live threads only: Linux keeps
//     no total for exited threads or children there, so this counter may
//     step back when a member ends (Rates counts such steps as 0);
//   - process_read_bytes_total, process_write_bytes_total: read_bytes and
//     write_bytes from /proc/PID/io (bytes that went to or came from the
//     block layer), over the members whose io file is readable; left out
//     when none is;
//   - process_rss_bytes, process_virtual_bytes (rss × page size and vsize
//     from /proc/PID/stat), process_threads, process_fds (entries of
//     /proc/PID/fd, over the members where it is readable; left out when
//     none is), process_count (live members) and process_cpus (the CPUs
//     the members' threads may run on, their Cpus_allowed_list joined: fewer
//     than the machine's when the server is pinned, as with taskset);
//   - when a CPU quota caps the members (a container's --cpus, systemd's
//     CPUQuota: their CPU cgroups from /proc/PID/cgroup, cgroup v2 or v1,
//     and those cgroups' ancestors, read as CgroupCPU says):
//     process_cpu_quota_cores (the most cores the quotas let them use
//     together), process_cpu_throttled_seconds_total (the time the quotas
//     held them back), process_cpu_periods_total and
//     process_cpu_throttled_periods_total (the quotas' enforcement periods
//     in which they had work, and those in which a quota stopped them);
//     left out when no quota applies.
//
// Sample returns an error, and emits nothing, when no root process is
// running (the sampler then records the source as down): the PID is gone,
// the pid file is missing or names no running process, or no process has
// the name. NewProcess returns an error for a selector with no field set or
// a negative PID. Like every source, it may be called from several
// goroutines; calls are serialised.
func NewProcess(sel ProcessSelector) (Source, error) {
	p, err := newProcess("/", sel)
	if err != nil {
		return nil, err
	}
	p.self = int32(os.Getpid())
	return p, nil
}

// ErrGenerator is wrapped by the error of a process source whose only
// match is the load generator itself (this process or its children).
var ErrGenerator = errors.New("that is the load generator, not a server")

// newProcess is NewProcess reading the /proc under root (tests use a
// fixture tree), with no process to leave out (set self).
func newProcess(root string, sel ProcessSelector) (*process, error) {
	if sel.PID == 0 && sel.Name == "" && sel.PIDFile == "" {
		return nil, errors.New("sampler: process selector is empty: set PID, Name or PIDFile")
	}
	if sel.PID < 0 {
		return nil, fmt.Errorf("sampler: process selector: PID %d < 0", sel.PID)
	}
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	var parts []string
	if sel.Name != "" {
		parts = append(parts, sel.Name)
	}
	if sel.PID > 0 {
		parts = append(parts, strconv.Itoa(sel.PID))
	}
	if sel.PIDFile != "" {
		parts = append(parts, "pidfile "+sel.PIDFile)
	}
	p := &process{
		root:       root,
		name:       "process " + strings.Join(parts, " "),
		sel:        sel,
		selName:    []byte(sel.Name),
		procDir:    cpath(root + "proc"),
		sem:        make(chan struct{}, 1),
		index:      make(map[int32]int32),
		argv0:      make(map[int32]argv0Match),
		outside:    make(map[int32]outsider),
		pageSize:   uint64(os.Getpagesize()),
		cgroupDirs: make(map[string][]cgroupDir),
	}
	if sel.PIDFile != "" {
		p.pidFile = cpath(sel.PIDFile)
	}
	return p, nil
}

type process struct {
	name     string
	sel      ProcessSelector
	self     int32 // the generator's PID, never counted (0: none)
	root     string
	selName  []byte
	procDir  []byte // NUL-terminated
	pidFile  []byte // NUL-terminated, nil without PIDFile
	sem      chan struct{}
	pageSize uint64

	// The processes known not to be members, by PID, with the inode number
	// of their /proc/PID directory (a new process under a reused PID gets
	// a new one): valid while the roots stay the same, see scan.
	outside    map[int32]outsider
	lastRoots  []int32  // root PIDs of the last successful Sample
	lastStarts []uint64 // and their start times
	rootPIDs   []int32  // PID and pid-file roots of this Sample
	why        []string // why roots are missing, this Sample

	// Reused from one Sample to the next.
	procs  []procEntry
	index  map[int32]int32 // pid → index in procs
	chain  []int32
	argv0  map[int32]argv0Match
	gen    uint32
	buf    []byte // file contents
	dirBuf []byte // getdents of /proc
	subBuf []byte // getdents of task/ and fd/
	// cgroupDirs are the CPU cgroups of a /proc/PID/cgroup text (cgroupsOf).
	cgroupDirs map[string][]cgroupDir
	path       []byte // relative path being opened
}

// argv0Match caches whether a process's argv[0] base name matched, for as
// long as the PID belongs to the same process (same start time).
type argv0Match struct {
	start uint64
	match bool
	gen   uint32
}

// outsider is a process known not to belong to the group.
type outsider struct {
	ino uint64
	gen uint32
}

// procEntry is one process from /proc/PID/stat.
type procEntry struct {
	ino                              uint64 // of /proc/PID
	pid, ppid                        int32
	state                            byte
	mark                             int8 // 0 undecided, 1 member, -1 not a member
	root                             bool
	utime, stime, cutime, cstime     uint64 // ticks
	minflt, cminflt, majflt, cmajflt uint64
	threads, start, vsize, rss       uint64
}

func (p *process) Name() string { return p.name }

func (p *process) Sample(ctx context.Context, emit func(Point)) error {
	if err := acquire(ctx, p.sem); err != nil {
		return err
	}
	defer func() { <-p.sem }()
	procFd, err := openAt(unix.AT_FDCWD, p.procDir, unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", p.name, pathString(p.procDir), err)
	}
	defer unix.Close(procFd)
	p.resolveRoots()
	// Skipping known outsiders is sound only for roots chosen by PID: a
	// process may exec into the selected name without changing its PID.
	skip := p.sel.Name == "" && slices.Equal(p.rootPIDs, p.lastRoots)
	if err := p.scan(procFd, skip); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = p.markRoots()
	if err == nil && skip && !p.sameRootStarts() {
		// A root PID now names another process: the outsiders known were
		// outsiders of the old group. Look at every process again.
		if err := p.scan(procFd, false); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		err = p.markRoots()
	}
	if err != nil {
		p.lastRoots = p.lastRoots[:0]
		clear(p.outside)
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.remember()
	var g groupTotals
	for i := range p.procs {
		if !p.isMember(int32(i)) {
			continue
		}
		e := &p.procs[i]
		g.user += e.utime + e.cutime
		g.system += e.stime + e.cstime
		g.minflt += e.minflt + e.cminflt
		g.majflt += e.majflt + e.cmajflt
		if e.state == 'Z' || e.state == 'X' {
			continue
		}
		g.count++
		g.threads += e.threads
		g.rss += e.rss * p.pageSize
		g.vsize += e.vsize
		p.readMember(procFd, e, &g)
		if i%64 == 63 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(g.cgroups) > 0 {
		cg := readCgroupCPU(g.cgroups)
		g.cg = &cg
	}
	g.emit(emit, userHZ)
	for i := range p.procs {
		if e := &p.procs[i]; e.root {
			emit(Point{Name: "process_root", Labels: "pid=" + strconv.Itoa(int(e.pid)), Kind: Gauge, Value: 1})
		}
	}
	return nil
}

// groupTotals are the sums over a group's members.
type groupTotals struct {
	user, system, minflt, majflt    uint64 // ticks (user, system)
	vol, invol                      uint64
	readBytes, writeBytes           uint64
	haveIO, haveFDs                 bool
	rss, vsize, threads, fds, count uint64
	// cpus is the union of the CPUs the members' threads may run on
	// (Cpus_allowed_list), haveCPUs whether any was read.
	cpus     cpuSet
	haveCPUs bool
	// cgroups are the CPU cgroups the members are in (each once), and cg
	// what they say, read when any member's cgroup was.
	cgroups []cgroupDir
	cg      *CgroupCPU
}

// cpuSet is a set of CPU numbers, up to 4,096.
type cpuSet [64]uint64

// allowCPUs adds the CPUs a thread may run on, from its status file's
// Cpus_allowed_list ("0-3,8"), to the group's.
func (g *groupTotals) allowCPUs(status []byte) {
	const key = "\nCpus_allowed_list:"
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return
	}
	f, _ := field(status, i+len(key))
	for _, part := range bytes.Split(f, []byte(",")) {
		lo, hi, isRange := bytes.Cut(part, []byte("-"))
		a, ok1 := parseUint(lo)
		b, ok2 := a, true
		if isRange {
			b, ok2 = parseUint(hi)
		}
		if !ok1 || !ok2 || b < a || b >= uint64(64*len(g.cpus)) {
			continue
		}
		for c := a; c <= b; c++ {
			g.cpus[c/64] |= 1 << (c % 64)
		}
		g.haveCPUs = true
	}
}

// emit emits the process series; user and system are in units of 1/hz s.
func (g *groupTotals) emit(emit func(Point), hz float64) {
	emit(Point{Name: "process_cpu_user_seconds_total", Kind: Counter, Value: float64(g.user) / hz})
	emit(Point{Name: "process_cpu_system_seconds_total", Kind: Counter, Value: float64(g.system) / hz})
	emit(Point{Name: "process_voluntary_switches_total", Kind: Counter, Value: float64(g.vol)})
	emit(Point{Name: "process_involuntary_switches_total", Kind: Counter, Value: float64(g.invol)})
	emit(Point{Name: "process_minor_faults_total", Kind: Counter, Value: float64(g.minflt)})
	emit(Point{Name: "process_major_faults_total", Kind: Counter, Value: float64(g.majflt)})
	if g.haveIO {
		emit(Point{Name: "process_read_bytes_total", Kind: Counter, Value: float64(g.readBytes)})
		emit(Point{Name: "process_write_bytes_total", Kind: Counter, Value: float64(g.writeBytes)})
	}
	emit(Point{Name: "process_rss_bytes", Kind: Gauge, Value: float64(g.rss)})
	emit(Point{Name: "process_virtual_bytes", Kind: Gauge, Value: float64(g.vsize)})
	emit(Point{Name: "process_threads", Kind: Gauge, Value: float64(g.threads)})
	if g.haveFDs {
		emit(Point{Name: "process_fds", Kind: Gauge, Value: float64(g.fds)})
	}
	emit(Point{Name: "process_count", Kind: Gauge, Value: float64(g.count)})
	if g.haveCPUs {
		n := 0
		for _, w := range g.cpus {
			n += bits.OnesCount64(w)
		}
		emit(Point{Name: "process_cpus", Kind: Gauge, Value: float64(n)})
	}
	if g.cg != nil && g.cg.HasQuota() {
		emit(Point{Name: "process_cpu_quota_cores", Kind: Gauge, Value: g.cg.QuotaCores})
		emit(Point{Name: "process_cpu_throttled_seconds_total", Kind: Counter, Value: g.cg.Throttled.Seconds()})
		emit(Point{Name: "process_cpu_periods_total", Kind: Counter, Value: float64(g.cg.Periods)})
		emit(Point{Name: "process_cpu_throttled_periods_total", Kind: Counter, Value: float64(g.cg.ThrottledPeriods)})
	}
}

// scan reads /proc/*/stat of every process into p.procs and p.index. With
// skip, a process recorded in p.outside under the same inode number is
// passed over unread: it is still the process that was found outside the
// group, and a process outside cannot come in while the roots stay the same
// processes (a process's parent changes only when the parent exits, and
// then to a reaper that is outside too, or, if the reaper is a member, from
// a member). Without skip, p.outside is emptied.
func (p *process) scan(procFd int, skip bool) error {
	p.procs = p.procs[:0]
	clear(p.index)
	if !skip {
		clear(p.outside)
	}
	p.gen++
	if _, err := unix.Seek(procFd, 0, io.SeekStart); err != nil { // a second scan in one Sample
		return fmt.Errorf("reading %s: %w", pathString(p.procDir), err)
	}
	err := eachDirent(procFd, &p.dirBuf, func(ino uint64, name []byte) {
		pid, ok := parseUint(name)
		if !ok || pid == 0 || pid > 1<<31-1 {
			return
		}
		if skip {
			if o, ok := p.outside[int32(pid)]; ok && o.ino == ino {
				o.gen = p.gen
				p.outside[int32(pid)] = o
				return
			}
		}
		p.path = append(append(append(p.path[:0], name...), "/stat"...), 0)
		b, err := readRecordAt(procFd, p.path, &p.buf)
		if err != nil {
			return // exited meanwhile
		}
		var e procEntry
		if !parseProcStat(b, &e) || e.pid != int32(pid) {
			return
		}
		e.ino = ino
		if p.sel.Name != "" && e.state != 'Z' && e.state != 'X' {
			e.root = p.nameMatches(procFd, name, b, &e)
		}
		p.index[e.pid] = int32(len(p.procs))
		p.procs = append(p.procs, e)
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", pathString(p.procDir), err)
	}
	for pid, m := range p.argv0 {
		if m.gen != p.gen {
			delete(p.argv0, pid)
		}
	}
	return nil
}

// remember records, after a successful membership walk, the processes read
// that are outside the group (and forgets the ones gone), and the roots.
func (p *process) remember() {
	for i := range p.procs {
		e := &p.procs[i]
		if !p.isMember(int32(i)) {
			p.outside[e.pid] = outsider{ino: e.ino, gen: p.gen}
		}
	}
	for pid, o := range p.outside {
		if o.gen != p.gen {
			delete(p.outside, pid)
		}
	}
	p.lastRoots = append(p.lastRoots[:0], p.rootPIDs...)
	p.lastStarts = p.lastStarts[:0]
	for _, pid := range p.rootPIDs {
		var start uint64
		if i, ok := p.index[pid]; ok {
			start = p.procs[i].start
		}
		p.lastStarts = append(p.lastStarts, start)
	}
}

// sameRootStarts reports whether the roots chosen by PID are the processes
// of the last Sample (same start times).
func (p *process) sameRootStarts() bool {
	if len(p.lastStarts) != len(p.rootPIDs) {
		return false
	}
	for k, pid := range p.rootPIDs {
		var start uint64
		if i, ok := p.index[pid]; ok {
			start = p.procs[i].start
		}
		if start != p.lastStarts[k] {
			return false
		}
	}
	return true
}

// nameMatches reports whether the process's comm (inside stat) or the base
// name of its argv[0] equals the selector's Name. The argv[0] answer is
// cached per process.
func (p *process) nameMatches(procFd int, pidName, stat []byte, e *procEntry) bool {
	if l, r := indexByte(stat, '('), bytes.LastIndexByte(stat, ')'); l >= 0 && r > l && bytes.Equal(stat[l+1:r], p.selName) {
		return true
	}
	if m, ok := p.argv0[e.pid]; ok && m.start == e.start {
		m.gen = p.gen
		p.argv0[e.pid] = m
		return m.match
	}
	match := false
	p.path = append(append(append(p.path[:0], pidName...), "/cmdline"...), 0)
	if b, err := readFileAt(procFd, p.path, &p.subBuf); err == nil {
		if z := indexByte(b, 0); z >= 0 {
			b = b[:z]
		}
		if s := bytes.LastIndexByte(b, '/'); s >= 0 {
			b = b[s+1:]
		}
		match = bytes.Equal(b, p.selName)
	}
	p.argv0[e.pid] = argv0Match{start: e.start, match: match, gen: p.gen}
	return match
}

// resolveRoots finds the PIDs of the roots chosen by PID and by pid file
// (the pid file is read now), in p.rootPIDs, and notes in p.why what is
// wrong with them.
func (p *process) resolveRoots() {
	p.rootPIDs, p.why = p.rootPIDs[:0], p.why[:0]
	if p.sel.PID > 0 {
		p.rootPIDs = append(p.rootPIDs, int32(p.sel.PID))
	}
	if p.pidFile != nil {
		b, err := readPIDFile(p.pidFile, &p.buf)
		f, _ := field(b, 0)
		pid, ok := parseUint(f)
		switch {
		case err != nil:
			p.why = append(p.why, fmt.Sprintf("pid file: %v", err))
		case !ok || pid == 0 || pid > 1<<31-1:
			p.why = append(p.why, fmt.Sprintf("the pid file holds no PID (%.20q)", f))
		default:
			p.rootPIDs = append(p.rootPIDs, int32(pid))
		}
	}
}

// markRoots marks the selected roots (set by scan for Name, resolved by
// resolveRoots for PID and pid file) and fails when there is none. The
// generator (p.self) is marked outside the group first: a name matching it
// or one of its children does not choose them, and no member descends
// through it.
func (p *process) markRoots() error {
	why := p.why
	generator := false
	for k, pid := range p.rootPIDs {
		what := "process %d"
		if !(k == 0 && p.sel.PID > 0) {
			what = "process %d from the pid file"
		}
		switch {
		case p.self != 0 && pid == p.self:
			why = append(why, fmt.Sprintf(what+" is this throng, the load generator, not a server", pid))
			generator = true
		case p.isSelfThread(pid):
			why = append(why, fmt.Sprintf(what+" is a thread of this throng, the load generator, not a server", pid))
			generator = true
		case !p.markRoot(pid):
			why = append(why, fmt.Sprintf(what+" is not running", pid))
		}
	}
	var mine []string // the generator's children that the name matched
	selfMatched := false
	if i, ok := p.index[p.self]; ok && p.self != 0 {
		p.procs[i].mark = -1
		if p.procs[i].root && !slices.Contains(p.rootPIDs, p.self) {
			p.procs[i].root = false // matched by name
			selfMatched = true
		}
	}
	roots := 0
	for i := range p.procs {
		e := &p.procs[i]
		if !e.root {
			continue
		}
		if !slices.Contains(p.rootPIDs, e.pid) && p.underSelf(int32(i)) {
			e.root = false // a child of the generator, matched by name
			mine = append(mine, strconv.Itoa(int(e.pid)))
			continue
		}
		e.mark = 1
		roots++
	}
	if roots == 0 {
		switch {
		case p.sel.Name != "" && len(mine) > 0:
			who := fmt.Sprintf("children of this throng (PID %d)", p.self)
			if selfMatched {
				who = fmt.Sprintf("this throng (PID %d) and its children", p.self)
			}
			why = append(why, fmt.Sprintf("the only processes named %q are %s (%s)", p.sel.Name, who, strings.Join(mine, ", ")))
			generator = true
		case p.sel.Name != "" && selfMatched:
			why = append(why, fmt.Sprintf("the only process named %q is this throng (PID %d)", p.sel.Name, p.self))
			generator = true
		case p.sel.Name != "":
			why = append(why, fmt.Sprintf("no process is named %q", p.sel.Name))
		}
		if generator {
			return fmt.Errorf("%s: %w", strings.Join(why, "; "), ErrGenerator)
		}
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// underSelf reports whether procs[i] descends from the generator.
func (p *process) underSelf(i int32) bool {
	if p.self == 0 {
		return false
	}
	for j, n := i, 0; n <= len(p.procs); n++ {
		e := &p.procs[j]
		if e.ppid == p.self {
			return true
		}
		k, ok := p.index[e.ppid]
		if !ok || e.ppid == e.pid {
			return false
		}
		j = k
	}
	return false
}

// isSelfThread reports whether pid is a thread of the generator (other
// than its main one): /proc lists only processes, so a thread's ID is not
// found by the scan.
func (p *process) isSelfThread(pid int32) bool {
	if p.self == 0 || pid == p.self {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("%sproc/%d/task/%d", p.root, p.self, pid))
	return err == nil
}

// markRoot makes pid a root if it is running (not a zombie).
func (p *process) markRoot(pid int32) bool {
	i, ok := p.index[pid]
	if !ok {
		return false
	}
	e := &p.procs[i]
	if e.state == 'Z' || e.state == 'X' {
		return false
	}
	e.root = true
	return true
}

// isMember reports whether procs[i] is a root or descends from one, walking
// up the parents and remembering the answer for every process on the way.
func (p *process) isMember(i int32) bool {
	chain := p.chain[:0]
	verdict := int8(-1)
	for j := i; ; {
		e := &p.procs[j]
		if e.mark != 0 {
			verdict = e.mark
			break
		}
		chain = append(chain, j)
		k, ok := p.index[e.ppid]
		if !ok || e.ppid == e.pid || len(chain) > len(p.procs) {
			break
		}
		j = k
	}
	for _, j := range chain {
		p.procs[j].mark = verdict
	}
	p.chain = chain
	return verdict == 1
}

// readMember adds a live member's switches, I/O and open files to g.
func (p *process) readMember(procFd int, e *procEntry, g *groupTotals) {
	pidName := strconv.AppendInt(p.path[:0], int64(e.pid), 10)
	n := len(pidName)
	if e.threads <= 1 {
		p.path = append(append(pidName, "/status"...), 0)
		if b, err := readRecordAt(procFd, p.path, &p.buf); err == nil {
			vol, invol := parseSwitches(b)
			g.vol += vol
			g.invol += invol
			g.allowCPUs(b)
		}
	} else {
		p.path = append(append(pidName, "/task"...), 0)
		if fd, err := openAt(procFd, p.path, unix.O_DIRECTORY); err == nil {
			p.path = p.path[:n+len("/task")]
			_ = eachDirent(fd, &p.subBuf, func(_ uint64, tid []byte) {
				p.path = append(append(append(append(p.path[:n+len("/task")], '/'), tid...), "/status"...), 0)
				if b, err := readRecordAt(procFd, p.path, &p.buf); err == nil {
					vol, invol := parseSwitches(b)
					g.vol += vol
					g.invol += invol
					g.allowCPUs(b)
				}
			})
			unix.Close(fd)
		}
	}
	p.path = append(append(p.path[:n], "/io"...), 0)
	if b, err := readRecordAt(procFd, p.path, &p.buf); err == nil {
		if rb, wb, ok := parseIO(b); ok {
			g.readBytes += rb
			g.writeBytes += wb
			g.haveIO = true
		}
	}
	p.path = append(append(p.path[:n], "/fd"...), 0)
	if fds, ok := countFDs(procFd, p.path, &p.subBuf); ok {
		g.fds += fds
		g.haveFDs = true
	}
	p.path = append(append(p.path[:n], "/cgroup"...), 0)
	if b, err := readFileAt(procFd, p.path, &p.subBuf); err == nil {
		for _, d := range p.cgroupsOf(b) {
			if !slices.Contains(g.cgroups, d) {
				g.cgroups = append(g.cgroups, d)
			}
		}
	}
}

// cgroupsOf is cpuCgroupsOf of a member's /proc/PID/cgroup text, under
// this source's root, remembered by that text: the members of a group
// are mostly in one cgroup, and its directories are then looked up once.
func (p *process) cgroupsOf(procCgroup []byte) []cgroupDir {
	if d, ok := p.cgroupDirs[string(procCgroup)]; ok {
		return d
	}
	if len(p.cgroupDirs) >= 64 {
		clear(p.cgroupDirs)
	}
	d := cpuCgroupsOf(procCgroup, p.root+"sys/fs/cgroup")
	p.cgroupDirs[string(procCgroup)] = d
	return d
}

// countFDs counts the open descriptors of a process from its /proc/PID/fd
// directory (path, relative to dirfd), the one that reads it included when
// the process is this one. Since Linux 6.2 the directory's size is that
// count, read with one fstat; listing 10,000 descriptors instead costs about
// 1.5 % of a core at one read per second. Older kernels report size 0 and the
// entries are counted, as they are in a directory that is not procfs'
// (the tests' fixtures).
func countFDs(dirfd int, path []byte, buf *[]byte) (uint64, bool) {
	fd, err := openAt(dirfd, path, unix.O_DIRECTORY)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(fd, &st) == nil && st.Size > 0 && unix.Fstatfs(fd, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC {
		return uint64(st.Size), true
	}
	return countEntries(fd, buf)
}

// countEntries counts the entries of the open directory fd other than "."
// and "..".
func countEntries(fd int, buf *[]byte) (uint64, bool) {
	var n uint64
	if err := eachDirent(fd, buf, func(uint64, []byte) { n++ }); err != nil {
		return 0, false
	}
	return n, true
}

// parseProcStat parses /proc/PID/stat: "pid (comm) state ppid ...". The
// command name may hold spaces and parentheses, so the fields are counted
// from the last ')'.
func parseProcStat(b []byte, e *procEntry) bool {
	l := indexByte(b, '(')
	r := bytes.LastIndexByte(b, ')')
	if l < 1 || r < l {
		return false
	}
	pid, ok := parseUint(trimBlanks(b[:l]))
	if !ok || pid > 1<<31-1 {
		return false
	}
	e.pid = int32(pid)
	// Fields after ')', 0-based: 0 state, 1 ppid, 7 minflt, 8 cminflt,
	// 9 majflt, 10 cmajflt, 11 utime, 12 stime, 13 cutime, 14 cstime,
	// 17 num_threads, 19 starttime, 20 vsize, 21 rss.
	i := r + 1
	var f []byte
	for k := 0; k <= 21; k++ {
		f, i = field(b, i)
		if f == nil {
			return false
		}
		switch k {
		case 0:
			e.state = f[0]
			continue
		case 1, 7, 8, 9, 10, 11, 12, 13, 14, 17, 19, 20, 21:
		default:
			continue
		}
		// cutime, cstime and rss are signed in the kernel; never negative
		// in practice.
		v, ok := parseUint(f)
		if !ok {
			if len(f) > 1 && f[0] == '-' {
				v, ok = 0, true
			} else {
				return false
			}
		}
		switch k {
		case 1:
			e.ppid = int32(v)
		case 7:
			e.minflt = v
		case 8:
			e.cminflt = v
		case 9:
			e.majflt = v
		case 10:
			e.cmajflt = v
		case 11:
			e.utime = v
		case 12:
			e.stime = v
		case 13:
			e.cutime = v
		case 14:
			e.cstime = v
		case 17:
			e.threads = v
		case 19:
			e.start = v
		case 20:
			e.vsize = v
		case 21:
			e.rss = v
		}
	}
	return true
}

// parseSwitches reads voluntary_ctxt_switches and nonvoluntary_ctxt_switches
// from a /proc status file (they are near its end).
func parseSwitches(b []byte) (vol, invol uint64) {
	const v, nv = "\nvoluntary_ctxt_switches:", "\nnonvoluntary_ctxt_switches:"
	if i := bytes.LastIndex(b, []byte(v)); i >= 0 {
		f, _ := field(b, i+len(v))
		vol, _ = parseUint(f)
	}
	if i := bytes.LastIndex(b, []byte(nv)); i >= 0 {
		f, _ := field(b, i+len(nv))
		invol, _ = parseUint(f)
	}
	return vol, invol
}

// parseIO reads read_bytes and write_bytes from /proc/PID/io.
func parseIO(b []byte) (rb, wb uint64, ok bool) {
	var okR, okW bool
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, i := field(line, 0)
		switch string(key) {
		case "read_bytes:":
			f, _ := field(line, i)
			rb, okR = parseUint(f)
		case "write_bytes:":
			f, _ := field(line, i)
			wb, okW = parseUint(f)
		}
	}
	return rb, wb, okR && okW
}

// maxPIDFile bounds what is read of a pid file: a PID is a few digits.
const maxPIDFile = 4096

// readPIDFile reads the start of a pid file, refusing what is not a
// regular file: a FIFO must not block the sampler, nor /dev/zero fill
// its memory.
func readPIDFile(path []byte, buf *[]byte) ([]byte, error) {
	fd, err := openAt(unix.AT_FDCWD, path, unix.O_NONBLOCK)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: pathString(path), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: pathString(path), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", pathString(path))
	}
	if cap(*buf) < maxPIDFile {
		*buf = make([]byte, maxPIDFile)
	}
	b := (*buf)[:maxPIDFile]
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: pathString(path), Err: err}
	}
	return b[:max(n, 0)], nil
}
