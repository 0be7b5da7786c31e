package sampler

import "testing"

// A generator pinned to CPU 0, which busy loops keep busy while CPU 1
// idles, runs on CPUs 100 % busy though the machine is 50 % busy: the
// guard must judge the first (CPUsBusy). Unpinned, both are the machine's.
func TestCPUsBusyOfTheAffinity(t *testing.T) {
	before := []byte("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\nintr 1\n")
	// 100 ticks on each CPU later: CPU 0 all busy (user), CPU 1 all idle.
	after := []byte("cpu  200 0 100 900 0 0 0 0 0 0\ncpu0 150 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 500 0 0 0 0 0 0\nintr 2\n")
	for _, c := range []struct {
		name          string
		mine          func(int) bool
		machine, cpus float64
	}{
		{"pinned to CPU 0", func(n int) bool { return n == 0 }, 0.5, 1},
		{"pinned to CPU 1", func(n int) bool { return n == 1 }, 0.5, 0},
		{"on every CPU", func(int) bool { return true }, 0.5, 0.5},
	} {
		var a, b SelfSample
		a.MachineBusy, a.MachineAll, a.CPUsBusy, a.CPUsAll = parseStatCPU(before, c.mine)
		b.MachineBusy, b.MachineAll, b.CPUsBusy, b.CPUsAll = parseStatCPU(after, c.mine)
		if m, p := MachineBusy(a, b), CPUsBusy(a, b); m != c.machine || p != c.cpus {
			t.Errorf("%s: machine %.2f busy, its CPUs %.2f; want %.2f and %.2f", c.name, m, p, c.machine, c.cpus)
		}
	}
	// This process's own reading: its CPUs are some of the machine's.
	s := ReadSelf(nil)
	if s.CPUsAll == 0 || s.CPUsAll > s.MachineAll+uint64(Cores())*10 {
		t.Errorf("read: its CPUs' time %d, the machine's %d", s.CPUsAll, s.MachineAll)
	}
}
