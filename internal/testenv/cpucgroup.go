package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUCgroup is a CPU cgroup of its own with a quota, made by a test or a
// bench to confine a process as a container's --cpus or systemd's
// CPUQuota would: cgroup v2 cpu.max, or v1 cpu.cfs_quota_us and
// cpu.cfs_period_us in the cpu controller's mount. It needs a writable
// cgroup file system (root, not in a container that hides it).
//
// A process in the real-time class is not limited by a CPU quota (the
// quota limits the normal class only), and under cgroup v1 it may not even
// join: put it back in the normal class first (chrt -o 0).
type CPUCgroup struct {
	// Dir is the cgroup's directory; Procs its cgroup.procs file (write a
	// PID to it to move that process in).
	Dir, Procs string
	// Cores is the quota, in cores (quota over period).
	Cores float64
	// How says which interface made it: "cgroup v2 cpu.max, 25 % of one
	// CPU".
	How string
	// parentProcs is where Close moves the processes still in it.
	parentProcs string
}

// cgroupPeriod is the quota's enforcement period, in µs: the kernel's and
// Docker's default.
const cgroupPeriod = 100000

// NewCPUCgroup makes a CPU cgroup named name (made unique with this
// process's PID) whose processes may use cores of CPU together (0.25: a
// quarter of one CPU). It returns an error, having made nothing, when the
// cgroup file system is not writable or has no cpu controller.
func NewCPUCgroup(name string, cores float64) (*CPUCgroup, error) {
	if !(cores > 0) {
		return nil, fmt.Errorf("testenv: a CPU cgroup of %g cores", cores)
	}
	quota := int(cores*cgroupPeriod + 0.5)
	name = fmt.Sprintf("throng-%s-%d", name, os.Getpid())
	c := &CPUCgroup{Cores: float64(quota) / cgroupPeriod}
	var err error
	if b, e := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); e == nil && strings.Contains(string(b), "cpu") {
		// cgroup v2: the root's children get the cpu controller.
		os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0)
		c.Dir, c.parentProcs = filepath.Join("/sys/fs/cgroup", name), "/sys/fs/cgroup/cgroup.procs"
		if err = os.Mkdir(c.Dir, 0o755); err == nil {
			err = os.WriteFile(filepath.Join(c.Dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, cgroupPeriod)), 0)
		}
		c.How = "cgroup v2 cpu.max"
	} else {
		c.Dir, c.parentProcs = filepath.Join("/sys/fs/cgroup/cpu", name), "/sys/fs/cgroup/cpu/cgroup.procs"
		if err = os.Mkdir(c.Dir, 0o755); err == nil {
			err = errors.Join(os.WriteFile(filepath.Join(c.Dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cgroupPeriod)), 0),
				os.WriteFile(filepath.Join(c.Dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quota)), 0))
		}
		c.How = "cgroup v1 cpu.cfs_quota_us"
	}
	if err != nil {
		if c.Dir != "" {
			os.Remove(c.Dir)
		}
		return nil, fmt.Errorf("testenv: a CPU cgroup: %w", err)
	}
	c.Procs = filepath.Join(c.Dir, "cgroup.procs")
	c.How += fmt.Sprintf(", %.0f %% of one CPU", 100*c.Cores)
	return c, nil
}

// Favour gives the cgroup the largest CPU weight (v2 cpu.weight 10000,
// v1 cpu.shares 262144): on a machine busy with other work, its processes
// then get the CPU they ask for up to their quota, as a container whose
// CPU is reserved would, rather than a share diluted by everything else
// that runs.
func (c *CPUCgroup) Favour() error {
	if _, err := os.Stat(filepath.Join(c.Dir, "cpu.weight")); err == nil {
		return os.WriteFile(filepath.Join(c.Dir, "cpu.weight"), []byte("10000"), 0)
	}
	return os.WriteFile(filepath.Join(c.Dir, "cpu.shares"), []byte("262144"), 0)
}

// Add moves the processes pids (all their threads) into the cgroup.
func (c *CPUCgroup) Add(pids ...int) error {
	for _, pid := range pids {
		if err := os.WriteFile(c.Procs, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("testenv: moving process %d into %s: %w", pid, c.Dir, err)
		}
	}
	return nil
}

// Close moves the processes still in the cgroup back to the root cgroup
// and removes it; it waits up to 5 s for processes that are exiting.
func (c *CPUCgroup) Close() error {
	var err error
	for range 50 {
		if b, e := os.ReadFile(c.Procs); e == nil {
			for _, f := range strings.Fields(string(b)) {
				os.WriteFile(c.parentProcs, []byte(f), 0)
			}
		}
		if err = os.Remove(c.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("testenv: removing the CPU cgroup %s: %w", c.Dir, err)
}
