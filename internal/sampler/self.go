// Package sampler reads counters beside the load. This file holds what the
// client-bound guard needs about the generator itself: its process CPU time,
// the CPU time of chosen threads (the event loops), the machine's CPU and
// the process's memory.
package sampler

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// SelfSample is one reading of the generator's own counters. Differences
// between two readings give rates.
type SelfSample struct {
	At          time.Time
	ProcessCPU  time.Duration   // user + system time of this process
	ThreadCPU   []time.Duration // on-CPU time of each thread asked for
	MachineBusy uint64          // machine CPU time not idle or iowait, in clock ticks
	MachineAll  uint64          // all machine CPU time, in clock ticks
	// CPUsBusy and CPUsAll are MachineBusy and MachineAll over the CPUs
	// this process may run on (its affinity: taskset, a cpuset), the
	// whole machine's when it may run on all of them.
	CPUsBusy, CPUsAll uint64
	RSSBytes          uint64
	Goroutines        int
	// TasksOnCPU and TasksWaiting sum, over every thread of the process,
	// the time spent on a CPU and the time spent runnable but waiting for
	// one (from /proc/self/task/*/schedstat).
	TasksOnCPU   time.Duration
	TasksWaiting time.Duration
	// Throttled is the time the CPU quota of the process's cgroups held it
	// back so far (CPUThrottled).
	Throttled time.Duration
}

// ReadSelf reads the counters now. Threads are Linux thread IDs (from
// unix.Gettid in the thread itself). A counter that cannot be read is zero.
func ReadSelf(threads []int) SelfSample {
	s := SelfSample{At: time.Now(), Goroutines: runtime.NumGoroutine(), ProcessCPU: ProcessCPU()}
	for _, tid := range threads {
		s.ThreadCPU = append(s.ThreadCPU, threadCPU(tid))
	}
	s.MachineBusy, s.MachineAll, s.CPUsBusy, s.CPUsAll = machineCPU()
	s.RSSBytes = selfRSS()
	s.TasksOnCPU, s.TasksWaiting = tasksSchedstat()
	s.Throttled = CPUThrottled()
	return s
}

// ProcessCPU is this process's user and system CPU time so far (zero when
// it cannot be read). It is one system call that never blocks.
func ProcessCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tasksSchedstat sums the first two fields of every thread's schedstat:
// nanoseconds on a CPU, and nanoseconds waiting on a run queue.
func tasksSchedstat() (onCPU, waiting time.Duration) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		run, _ := strconv.ParseInt(string(f[0]), 10, 64)
		wait, _ := strconv.ParseInt(string(f[1]), 10, 64)
		onCPU += time.Duration(run)
		waiting += time.Duration(wait)
	}
	return onCPU, waiting
}

// CPUWaitShare is the share of the time the process's threads had work to
// do that they spent waiting for a CPU, between two readings: near 0 when
// the generator gets the CPU it asks for, high when it is starved (threads
// that exited between the readings are not counted).
func CPUWaitShare(a, b SelfSample) float64 {
	run := b.TasksOnCPU - a.TasksOnCPU
	wait := b.TasksWaiting - a.TasksWaiting
	if run <= 0 || wait <= 0 {
		return 0
	}
	return wait.Seconds() / (run + wait).Seconds()
}

// CPUWaitCores is the time the process's threads together spent runnable
// but waiting for a CPU between two readings, per second of wall time (0.3:
// as if three tenths of a core had been withheld).
func CPUWaitCores(a, b SelfSample) float64 {
	wall := b.At.Sub(a.At).Seconds()
	wait := b.TasksWaiting - a.TasksWaiting
	if wall <= 0 || wait <= 0 {
		return 0
	}
	return wait.Seconds() / wall
}

// threadCPU reads the first field of /proc/self/task/TID/schedstat: the
// thread's time on a CPU, in nanoseconds.
func threadCPU(tid int) time.Duration {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return time.Duration(ns)
}

// machineCPU reads /proc/stat: the machine's busy and total CPU time
// (its aggregate "cpu" line), and the same summed over the CPUs this
// process may run on (the "cpuN" lines of its affinity).
func machineCPU() (busy, all, cpusBusy, cpusAll uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, 0
	}
	var set unix.CPUSet
	pinned := unix.SchedGetaffinity(0, &set) == nil && set.Count() > 0
	return parseStatCPU(b, func(cpu int) bool { return !pinned || set.IsSet(cpu) })
}

// parseStatCPU reads the text of /proc/stat (see machineCPU); mine says
// which CPUs count in cpusBusy and cpusAll.
func parseStatCPU(stat []byte, mine func(cpu int) bool) (busy, all, cpusBusy, cpusAll uint64) {
	for _, line := range bytes.Split(stat, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 5 || !bytes.HasPrefix(f[0], []byte("cpu")) {
			continue
		}
		// user nice system idle iowait irq softirq steal guest guest_nice;
		// guest time is already counted in user and nice.
		var b, a uint64
		for i, v := range f[1:] {
			if i >= 8 {
				break
			}
			n, _ := strconv.ParseUint(string(v), 10, 64)
			a += n
			if i != 3 && i != 4 {
				b += n
			}
		}
		if string(f[0]) == "cpu" {
			busy, all = b, a
			continue
		}
		if n, err := strconv.Atoi(string(f[0][3:])); err == nil && mine(n) {
			cpusBusy += b
			cpusAll += a
		}
	}
	return busy, all, cpusBusy, cpusAll
}

func selfRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return pages * uint64(os.Getpagesize())
}

// CPUCores is the process CPU used between two readings, in cores.
func CPUCores(a, b SelfSample) float64 {
	wall := b.At.Sub(a.At).Seconds()
	if wall <= 0 {
		return 0
	}
	return (b.ProcessCPU - a.ProcessCPU).Seconds() / wall
}

// MachineBusy is the fraction (0..1) of all the machine's CPU time that was
// busy between two readings.
func MachineBusy(a, b SelfSample) float64 {
	all := b.MachineAll - a.MachineAll
	if all == 0 || b.MachineAll < a.MachineAll {
		return 0
	}
	return float64(b.MachineBusy-a.MachineBusy) / float64(all)
}

// CPUsBusy is the fraction (0..1) of the time of the CPUs this process
// may run on (its affinity) that was busy between two readings: the
// machine's busy share for a process that may run on every CPU; for one
// pinned to one CPU of two, that CPU's, whatever the other does.
func CPUsBusy(a, b SelfSample) float64 {
	all := b.CPUsAll - a.CPUsAll
	if all == 0 || b.CPUsAll < a.CPUsAll {
		return 0
	}
	return float64(b.CPUsBusy-a.CPUsBusy) / float64(all)
}

// ThreadBusy is each thread's busy fraction of one core between two readings.
func ThreadBusy(a, b SelfSample) []float64 {
	wall := b.At.Sub(a.At).Seconds()
	if wall <= 0 || len(a.ThreadCPU) != len(b.ThreadCPU) {
		return nil
	}
	out := make([]float64, len(b.ThreadCPU))
	for i := range out {
		out[i] = (b.ThreadCPU[i] - a.ThreadCPU[i]).Seconds() / wall
	}
	return out
}

// Cores returns the number of CPUs this process may run on.
func Cores() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		if n := set.Count(); n > 0 {
			return n
		}
	}
	return runtime.NumCPU()
}
