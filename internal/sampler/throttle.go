package sampler

import (
	"bufio"
	"bytes"
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
	var dirs []string // the CPU cgroup's directory: v2 first, v1 in its mounts
	sc := bufio.NewScanner(bytes.NewReader(procCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			dirs = append(dirs, path.Join(root, f[2]))
		case hasController(f[1], "cpu"):
			// Mounted under its controller list, or under "cpu" (often
			// both, one a link to the other: the first that exists).
			for _, m := range []string{f[1], "cpu", "cpu,cpuacct"} {
				if d := path.Join(root, m, f[2]); exists(d) {
					dirs = append(dirs, d)
					break
				}
			}
		}
	}
	var total time.Duration
	seen := map[string]bool{}
	for _, dir := range dirs {
		for d := dir; len(d) > len(root) && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			total += throttledIn(path.Join(d, "cpu.stat"))
		}
	}
	return total
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

// throttledIn reads the throttled time in a cgroup's cpu.stat file.
func throttledIn(file string) time.Duration {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "throttled_usec": // v2
			return time.Duration(n) * time.Microsecond
		case "throttled_time": // v1, nanoseconds
			return time.Duration(n)
		}
	}
	return 0
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
