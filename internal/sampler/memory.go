package sampler

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is how much memory this process may still take.
type Memory struct {
	// Available is the smaller of the machine's available memory
	// (MemAvailable) and the room left under the process's cgroup limit.
	Available int64
	// Total is the machine's memory (MemTotal).
	Total int64
	// Source says where Available comes from, for messages.
	Source string
}

// ReadMemory reads /proc/meminfo and the process's memory cgroup (v2 or
// v1) under root ("/" on a live system). ok is false when the machine's
// memory cannot be read.
func ReadMemory(root string) (m Memory, ok bool) {
	b, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return Memory{}, false
	}
	info := meminfo(b)
	avail, okA := info["MemAvailable"]
	total, okT := info["MemTotal"]
	if !okA || !okT {
		return Memory{}, false
	}
	m = Memory{Available: avail, Total: total, Source: "MemAvailable in /proc/meminfo"}
	if room, ok := cgroupRoom(root); ok && room < m.Available {
		m.Available, m.Source = room, "the room left under this process's cgroup memory limit"
	}
	return m, true
}

// meminfo parses /proc/meminfo into bytes by field name.
func meminfo(b []byte) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		out[k] = n
	}
	return out
}

// cgroupRoom is the limit of the process's memory cgroup less its usage;
// ok is false without a limit.
func cgroupRoom(root string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var limit, usage string
		switch {
		case f[0] == "0" && f[1] == "": // v2
			dir := filepath.Join(root, "sys/fs/cgroup", f[2])
			limit, usage = filepath.Join(dir, "memory.max"), filepath.Join(dir, "memory.current")
		case strings.Contains(","+f[1]+",", ",memory,"): // v1
			dir := filepath.Join(root, "sys/fs/cgroup/memory", f[2])
			limit, usage = filepath.Join(dir, "memory.limit_in_bytes"), filepath.Join(dir, "memory.usage_in_bytes")
		default:
			continue
		}
		l, okL := readInt(limit)
		u, okU := readInt(usage)
		// v1 says "no limit" with a number near 2^63.
		if okL && okU && l < 1<<60 {
			return max(0, l-u), true
		}
	}
	return 0, false
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
