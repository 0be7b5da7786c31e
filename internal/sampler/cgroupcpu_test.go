package sampler

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/testenv"
)

// The throttled time of a process's CPU cgroup and its ancestors, read
// from cgroup v2 and v1 layouts made in a temporary directory.
func TestCPUThrottled(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// v2: the leaf throttled 1.5 s, its parent (a container's limit) 2 s.
	write("pod/gen/cpu.stat", "usage_usec 900\nnr_periods 30\nnr_throttled 20\nthrottled_usec 1500000\n")
	write("pod/cpu.stat", "usage_usec 900\nthrottled_usec 2000000\n")
	write("cpu.stat", "usage_usec 5\n")
	// v1: the cpu controller mounted as cpu,cpuacct, throttled_time in ns.
	write("cpu,cpuacct/job/cpu.stat", "nr_periods 31\nnr_throttled 31\nthrottled_time 2724446518\n")
	for _, c := range []struct {
		name, cgroup string
		want         time.Duration
	}{
		{"v2 with an ancestor's quota", "0::/pod/gen\n", 3500 * time.Millisecond},
		{"v1", "12:memory:/job\n3:cpu,cpuacct:/job\n1:name=systemd:/\n", 2724446518},
		{"no quota", "0::/\n", 0},
		{"no cpu controller", "4:memory:/job\n", 0},
		{"a cgroup that is not there", "0::/gone\n", 0},
	} {
		if got := cpuThrottled([]byte(c.cgroup), root); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	at := time.Now()
	a := SelfSample{At: at, Throttled: time.Second}
	b := SelfSample{At: at.Add(2 * time.Second), Throttled: 1600 * time.Millisecond}
	if got := CPUThrottledShare(a, b); got < 0.2999 || got > 0.3001 {
		t.Errorf("throttled 0.6 s in 2 s: share %g, want 0.3", got)
	}
}

// The quota that caps a set of processes, from cgroup v2 and v1 layouts
// made in a temporary directory, each truth worked out by hand.
func TestCgroupQuota(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// v2: a pod of 1.5 CPUs holding web (no quota of its own) and db
	// (0.5); a box of 2 CPUs holding a (1) and b (0.25); free, no quota.
	write("pod/cpu.max", "150000 100000\n")
	write("pod/cpu.stat", "nr_periods 100\nnr_throttled 40\nthrottled_usec 2000000\n")
	write("pod/web/cpu.max", "max 100000\n")
	write("pod/db/cpu.max", "50000 100000\n")
	write("pod/db/cpu.stat", "nr_periods 50\nnr_throttled 10\nthrottled_usec 500000\n")
	write("box/cpu.max", "200000 100000\n")
	write("box/a/cpu.max", "100000 100000\n")
	write("box/b/cpu.max", "25000 100000\n")
	write("free/cpu.max", "max 100000\n")
	// v1: the cpu controller mounted as cpu,cpuacct; job limited to 0.2.
	write("cpu,cpuacct/job/cpu.cfs_quota_us", "20000\n")
	write("cpu,cpuacct/job/cpu.cfs_period_us", "100000\n")
	write("cpu,cpuacct/job/cpu.stat", "nr_periods 31\nnr_throttled 31\nthrottled_time 2724446518\n")
	write("cpu,cpuacct/open/cpu.cfs_quota_us", "-1\n")
	write("cpu,cpuacct/open/cpu.cfs_period_us", "100000\n")
	inf := math.Inf(1)
	for _, c := range []struct {
		name    string
		cgroups []string // one /proc/PID/cgroup per process
		quota   float64
		periods uint64
		thr     uint64
		time    time.Duration
	}{
		{"v2 leaf under its parent's quota", []string{"0::/pod/web\n"}, 1.5, 100, 40, 2 * time.Second},
		// db's periods and throttling are its own and its parent's.
		{"v2 leaf's own quota, under its parent's", []string{"0::/pod/db\n"}, 0.5, 150, 50, 2500 * time.Millisecond},
		// web is capped by the pod alone: the two together too.
		{"two leaves under one parent", []string{"0::/pod/web\n", "0::/pod/db\n"}, 1.5, 150, 50, 2500 * time.Millisecond},
		{"two leaves summing under their parent's", []string{"0::/box/a\n", "0::/box/b\n"}, 1.25, 0, 0, 0},
		{"two cgroups apart", []string{"0::/pod/db\n", "0::/box/b\n"}, 0.75, 150, 50, 2500 * time.Millisecond},
		{"one process free of any quota", []string{"0::/pod/db\n", "0::/free\n"}, inf, 150, 50, 2500 * time.Millisecond},
		{"in the root cgroup", []string{"0::/\n"}, inf, 0, 0, 0},
		{"v1", []string{"12:memory:/x\n3:cpu,cpuacct:/job\n"}, 0.2, 31, 31, 2724446518},
		{"v1, no quota", []string{"3:cpu,cpuacct:/open\n"}, inf, 0, 0, 0},
		{"no cpu controller", []string{"4:memory:/job\n"}, inf, 0, 0, 0},
	} {
		var dirs []cgroupDir
		for _, cg := range c.cgroups {
			dirs = append(dirs, cpuCgroupsOf([]byte(cg), root)...)
		}
		got := readCgroupCPU(dirs)
		if math.Abs(got.QuotaCores-c.quota) > 1e-12 && !(math.IsInf(c.quota, 1) && math.IsInf(got.QuotaCores, 1)) {
			t.Errorf("%s: quota %g cores, want %g", c.name, got.QuotaCores, c.quota)
		}
		if got.HasQuota() == math.IsInf(c.quota, 1) {
			t.Errorf("%s: HasQuota %v with a quota of %g", c.name, got.HasQuota(), c.quota)
		}
		if got.Periods != c.periods || got.ThrottledPeriods != c.thr || got.Throttled != c.time {
			t.Errorf("%s: %d periods, %d throttled, %s; want %d, %d, %s", c.name, got.Periods, got.ThrottledPeriods, got.Throttled, c.periods, c.thr, c.time)
		}
	}
}

// A real process in a real CPU cgroup with a quota of a quarter of a CPU,
// spinning: the process source says the quota (0.25 cores), the CPU it
// used (about the quota: 0.15 to 0.3 cores over 2 s), and that the quota
// held it back (throttled in most periods, for most of the time). Skipped
// where no CPU cgroup can be made.
func TestProcessUnderACPUQuota(t *testing.T) {
	cg, err := testenv.NewCPUCgroup("sampler-test", 0.25)
	if err != nil {
		t.Skipf("no writable CPU cgroup: %v", err)
	}
	defer func() {
		if err := cg.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// chrt -o 0: not in the real-time class, which a quota does not
	// limit; the shell joins the cgroup, then spins (bounded by timeout).
	cmd := exec.CommandContext(ctx, "chrt", "-o", "0", "sh", "-c", `echo $$ > "$0" && exec timeout 20 sh -c 'while :; do :; done'`, cg.Procs)
	// A group of its own, ended whole: killing timeout alone leaves its
	// spinning child running, orphaned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Skipf("chrt: %v", err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	time.Sleep(300 * time.Millisecond) // in the cgroup, spinning
	src, err := NewProcess(ProcessSelector{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	read := func() map[string]float64 {
		m := map[string]float64{}
		if err := src.Sample(ctx, func(p Point) { m[p.Key()] = p.Value }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, waitA := read(), cgroupWait(t, cg.Procs)
	time.Sleep(2 * time.Second)
	b, waitB := read(), cgroupWait(t, cg.Procs)
	wait := (waitB - waitA) / 2
	if q, ok := b["process_cpu_quota_cores"]; !ok || q != 0.25 {
		t.Fatalf("process_cpu_quota_cores %g (emitted %v), want 0.25 (%s)", q, ok, cg.How)
	}
	d := func(k string) float64 { return b[k] - a[k] }
	cores := (d("process_cpu_user_seconds_total") + d("process_cpu_system_seconds_total")) / 2
	periods, thr := d("process_cpu_periods_total"), d("process_cpu_throttled_periods_total")
	throttled := d("process_cpu_throttled_seconds_total") / 2
	t.Logf("%s: %.3f cores; throttled in %g of %g periods, %.2f s per s; waited for a CPU %.2f s per s", cg.How, cores, thr, periods, throttled, wait)
	if cores < 0.15 || cores > 0.3 {
		t.Errorf("a spinning process under a quarter of a CPU used %.3f cores", cores)
	}
	// 20 periods of 100 ms in 2 s; a spinning process is throttled in
	// each. It always has work: it runs (about 0.25 s per s) or waits
	// (the rest), and the kernel counts throttled time as waiting. On an
	// idle machine it is throttled 75 ms of each period; on a machine
	// kept busy by others part of that is a wait for a CPU before its
	// quota ran out (0.49 s per s throttled, in a CI run).
	if periods < 15 || thr < 0.8*periods {
		t.Errorf("throttled in %g of %g periods, want most of about 20", thr, periods)
	}
	if math.Abs(cores+wait-1) > 0.1 {
		t.Errorf("a spinning process ran %.2f and waited %.2f s per s: want 1 together", cores, wait)
	}
	if throttled < 0.25 || throttled > wait+0.05 {
		t.Errorf("throttled %.2f s per s, waiting %.2f: want a large part of the wait, no more than it", throttled, wait)
	}
}

// cgroupWait is the time the processes of a cgroup (its cgroup.procs) have
// waited to run, in seconds (/proc/PID/schedstat's second field: on a run
// queue, throttled by a quota included).
func cgroupWait(t *testing.T, procs string) float64 {
	b, err := os.ReadFile(procs)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, pid := range strings.Fields(string(b)) {
		st, err := os.ReadFile("/proc/" + pid + "/schedstat")
		if err != nil {
			continue // ended
		}
		if f := strings.Fields(string(st)); len(f) >= 2 {
			ns, _ := strconv.ParseFloat(f[1], 64)
			total += ns / 1e9
		}
	}
	return total
}

// A process outside any CPU quota has none of the quota's series.
func TestProcessWithoutAQuota(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	if readCgroupCPU(cpuCgroupsOf(b, cgroupRoot)).HasQuota() {
		t.Skip("this test runs under a CPU quota")
	}
	src, err := NewProcess(ProcessSelector{PID: os.Getppid()})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Sample(context.Background(), func(p Point) {
		if strings.HasPrefix(p.Name, "process_cpu_quota") || strings.Contains(p.Name, "throttled") || p.Name == "process_cpu_periods_total" {
			t.Errorf("emitted %s = %g with no quota", p.Name, p.Value)
		}
	}); err != nil {
		t.Fatal(err)
	}
}
