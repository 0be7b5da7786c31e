package sampler

// This file holds what the CPU cgroups of processes say of their CPU: the
// quota that caps it (a container's --cpus, systemd's CPUQuota) and the
// time that quota held them back. Both the generator (CPUThrottled) and a
// server's process group (the process source) are read here.

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// CPUThrottled is how long the CPU quota of this process's cgroups held
// it back so far: the throttled time of its CPU cgroup and of each of its
// ancestors with a quota of their own, summed (cgroup v2 cpu.stat
// throttled_usec, v1 cpu.stat throttled_time). Zero when the process has
// no CPU quota or the files cannot be read. A generator in a container
// with a CPU limit is starved this way on a machine otherwise idle, where
// waiting for a CPU (CPUWaitShare) is not judged.
func CPUThrottled() time.Duration {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return cpuThrottled(b, cgroupRoot)
}

// cpuThrottled reads the throttled time of the CPU cgroup named in
// procCgroup (the text of /proc/PID/cgroup) and of its ancestors, under
// root.
func cpuThrottled(procCgroup []byte, root string) time.Duration {
	return readCgroupCPU(cpuCgroupsOf(procCgroup, root)).Throttled
}

// cgroupDir is a process's CPU cgroup in one hierarchy: its directory,
// and the directory the hierarchy is mounted on (its root cgroup).
type cgroupDir struct{ mount, dir string }

// cpuCgroupsOf finds the CPU cgroups named in procCgroup (the text of
// /proc/PID/cgroup) under root: the cgroup v2 one, and the v1 one of the
// cpu controller in its mount (hybrid systems have both; only one holds
// the cpu controller, the other's files are absent and read as nothing).
func cpuCgroupsOf(procCgroup []byte, root string) []cgroupDir {
	var dirs []cgroupDir
	sc := bufio.NewScanner(bytes.NewReader(procCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			dirs = append(dirs, cgroupDir{root, path.Join(root, f[2])})
		case hasController(f[1], "cpu"):
			// Mounted under its controller list, or under "cpu" (often
			// both, one a link to the other: the first that exists).
			for _, m := range []string{f[1], "cpu", "cpu,cpuacct"} {
				if d := path.Join(root, m, f[2]); exists(d) {
					dirs = append(dirs, cgroupDir{path.Join(root, m), d})
					break
				}
			}
		}
	}
	return dirs
}

// CgroupCPU is what the CPU cgroups of a set of processes say of their
// CPU.
type CgroupCPU struct {
	// QuotaCores is the most CPU the processes may use together under
	// their cgroups' quotas, in cores (quota/period: cgroup v2 cpu.max,
	// v1 cpu.cfs_quota_us over cpu.cfs_period_us); +Inf when no quota
	// caps them. A cgroup's cap is the least of its own quota and the sum
	// of its children's caps (+Inf for a cgroup that holds one of the
	// processes itself); the processes' cap is that of their hierarchy's
	// root, the least over hierarchies.
	QuotaCores float64
	// Throttled is the time the quotas held the processes back: the
	// throttled time of each cgroup on the way from theirs to the root,
	// each counted once (summed over the CPUs the cgroup was throttled
	// on, so it may grow faster than the wall clock).
	Throttled time.Duration
	// Periods and ThrottledPeriods are, summed over the same cgroups, the
	// enforcement periods in which they had work to run (nr_periods) and
	// those in which a quota stopped them (nr_throttled).
	Periods, ThrottledPeriods uint64
}

// HasQuota says whether a quota caps the processes.
func (c CgroupCPU) HasQuota() bool { return !math.IsInf(c.QuotaCores, 1) && c.QuotaCores > 0 }

// readCgroupCPU reads the cgroups dirs (each holding at least one of the
// processes) and their ancestors.
func readCgroupCPU(dirs []cgroupDir) CgroupCPU {
	out := CgroupCPU{QuotaCores: math.Inf(1)}
	type node struct {
		mount    string
		holds    bool // a process is in this cgroup itself
		children []string
	}
	nodes := map[string]*node{}
	var tops []string // the nodes just below a hierarchy's root
	rootHolds := map[string]bool{}
	for _, cd := range dirs {
		if len(cd.dir) <= len(cd.mount) {
			rootHolds[cd.mount] = true // in the root cgroup: no quota there
			continue
		}
		child := ""
		for d := cd.dir; len(d) > len(cd.mount); d = path.Dir(d) {
			n, seen := nodes[d]
			if !seen {
				n = &node{mount: cd.mount}
				nodes[d] = n
				st := cpuStatIn(path.Join(d, "cpu.stat"))
				out.Throttled += st.throttled
				out.Periods += st.periods
				out.ThrottledPeriods += st.throttledPeriods
				if path.Dir(d) == cd.mount || len(path.Dir(d)) <= len(cd.mount) {
					tops = append(tops, d)
				}
			}
			if child == "" {
				n.holds = true
			} else if !seen || !containsString(n.children, child) {
				n.children = append(n.children, child)
			}
			child = d
		}
	}
	var capOf func(d string) float64
	capOf = func(d string) float64 {
		n := nodes[d]
		c := math.Inf(1)
		if !n.holds {
			c = 0
			for _, ch := range n.children {
				c += capOf(ch)
			}
		}
		return math.Min(c, quotaIn(d))
	}
	perMount := map[string]float64{}
	for _, d := range tops {
		perMount[nodes[d].mount] += capOf(d)
	}
	for m, c := range perMount {
		if !rootHolds[m] && c < out.QuotaCores {
			out.QuotaCores = c
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// quotaIn is a cgroup's own CPU quota in cores: cgroup v2 cpu.max
// ("20000 100000"; "max ..." none), v1 cpu.cfs_quota_us over
// cpu.cfs_period_us (-1: none); +Inf when it has none or it cannot be
// read.
func quotaIn(dir string) float64 {
	if b, err := os.ReadFile(path.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p
			}
		}
		return math.Inf(1)
	}
	q, ok1 := readInt(path.Join(dir, "cpu.cfs_quota_us"))
	p, ok2 := readInt(path.Join(dir, "cpu.cfs_period_us"))
	if !ok1 || !ok2 || q <= 0 || p <= 0 {
		return math.Inf(1)
	}
	return float64(q) / float64(p)
}

func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// cpuStat is what a cgroup's cpu.stat file says of its quota.
type cpuStat struct {
	throttled                 time.Duration
	periods, throttledPeriods uint64
}

// cpuStatIn reads a cgroup's cpu.stat file: nr_periods, nr_throttled,
// and the throttled time (v2 throttled_usec, v1 throttled_time in
// nanoseconds). Zero when it cannot be read.
func cpuStatIn(file string) cpuStat {
	var st cpuStat
	b, err := os.ReadFile(file)
	if err != nil {
		return st
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "throttled_usec": // v2
			st.throttled = time.Duration(n) * time.Microsecond
		case "throttled_time": // v1, nanoseconds
			st.throttled = time.Duration(n)
		case "nr_periods":
			st.periods = n
		case "nr_throttled":
			st.throttledPeriods = n
		}
	}
	return st
}

// CPUThrottledShare is the time the process's CPU quota held it back
// between two readings, per second of wall time (summed over the CPUs
// its threads were throttled on, so it may exceed 1).
func CPUThrottledShare(a, b SelfSample) float64 {
	wall := b.At.Sub(a.At).Seconds()
	d := b.Throttled - a.Throttled
	if wall <= 0 || d <= 0 {
		return 0
	}
	return d.Seconds() / wall
}
