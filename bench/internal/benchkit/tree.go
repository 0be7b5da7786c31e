package benchkit

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 100

// Tree follows a client's process tree (the process and every descendant)
// from /proc while it runs: CPU is the sum over every process seen of its
// last user+system time, PeakRSS the largest sum of the resident sets of
// the processes alive at one sample. Start it right after the process
// starts; Stop after Wait.
type Tree struct {
	root   int
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	ticks  map[int]uint64 // by pid: utime+stime at the last sample
	peak   int64          // bytes
	sample int
}

// Watch starts following the tree of pid, sampling every period.
func Watch(pid int, period time.Duration) *Tree {
	t := &Tree{root: pid, stop: make(chan struct{}), done: make(chan struct{}), ticks: map[int]uint64{}}
	go func() {
		defer close(t.done)
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			t.once()
			select {
			case <-t.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return t
}

// once takes one sample of the tree.
func (t *Tree) once() {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	stats := map[int][]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := statFields(pid)
		if f == nil {
			continue
		}
		stats[pid] = f
		ppid, _ := strconv.Atoi(f[1])
		kids[ppid] = append(kids[ppid], pid)
	}
	var rss int64
	t.mu.Lock()
	defer t.mu.Unlock()
	todo := []int{t.root}
	for len(todo) > 0 {
		pid := todo[0]
		todo = todo[1:]
		todo = append(todo, kids[pid]...)
		f := stats[pid]
		if f == nil {
			continue
		}
		// f[0] is the state (field 3); utime and stime are fields 14, 15.
		u, _ := strconv.ParseUint(f[11], 10, 64)
		s, _ := strconv.ParseUint(f[12], 10, 64)
		if u+s >= t.ticks[pid] {
			t.ticks[pid] = u + s
		}
		if f[0] != "Z" {
			rss += residentBytes(pid)
		}
	}
	t.peak = max(t.peak, rss)
	t.sample++
}

// statFields returns the fields of /proc/PID/stat after the command name
// (state first), or nil.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return nil
	}
	return f
}

// residentBytes is VmRSS of pid, in bytes; 0 when gone.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// Stop ends the sampling (after a last sample).
func (t *Tree) Stop() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}

// CPU is the tree's CPU seconds: the larger of what /proc showed and the
// rusage wait4 gave for ps (which holds the descendants the process waited
// for, and the time after the last sample); ps may be nil.
func (t *Tree) CPU(ps *os.ProcessState) float64 {
	t.mu.Lock()
	var ticks uint64
	for _, v := range t.ticks {
		ticks += v
	}
	t.mu.Unlock()
	proc := float64(ticks) / clockTick
	if ps == nil {
		return proc
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return max(proc, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()).Seconds())
	}
	return proc
}

// PeakRSS is the largest resident set of the tree seen, in bytes: the
// larger of the samples' and the rusage's maximum resident set of ps (one
// process's peak; ps may be nil).
func (t *Tree) PeakRSS(ps *os.ProcessState) int64 {
	t.mu.Lock()
	p := t.peak
	t.mu.Unlock()
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			p = max(p, ru.Maxrss<<10)
		}
	}
	return p
}

// RunTree runs cmd (not started) to its end while following its tree,
// sampling every period.
func RunTree(cmd *exec.Cmd, period time.Duration) (*Tree, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := Watch(cmd.Process.Pid, period)
	err := cmd.Wait()
	t.Stop()
	return t, err
}
