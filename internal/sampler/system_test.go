package sampler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ---- helpers shared by the tests of this package's sources

// points samples src once and returns its points by key; duplicate keys fail
// the test.
func points(t testing.TB, src Source) map[string]Point {
	t.Helper()
	m, err := tryPoints(src)
	if err != nil {
		t.Fatalf("%s: Sample: %v", src.Name(), err)
	}
	return m
}

func tryPoints(src Source) (map[string]Point, error) {
	m := make(map[string]Point)
	var dup []string
	err := src.Sample(context.Background(), func(p Point) {
		if _, ok := m[p.Key()]; ok {
			dup = append(dup, p.Key())
		}
		m[p.Key()] = p
	})
	if err == nil && len(dup) > 0 {
		err = fmt.Errorf("series emitted twice: %v", dup)
	}
	return m, err
}

// want is one expected point.
type want struct {
	key   string
	kind  Kind
	value float64
}

// checkPoints compares got with the expected points exactly (to a relative
// 1e-12, for float sums) and fails on any missing or extra series.
func checkPoints(t *testing.T, got map[string]Point, wants []want) {
	t.Helper()
	seen := make(map[string]bool)
	for _, w := range wants {
		seen[w.key] = true
		p, ok := got[w.key]
		switch {
		case !ok:
			t.Errorf("%s: missing", w.key)
		case p.Kind != w.kind:
			t.Errorf("%s: kind %v, want %v", w.key, p.Kind, w.kind)
		case math.Abs(p.Value-w.value) > 1e-12*math.Max(1, math.Abs(w.value)):
			t.Errorf("%s = %v, want %v", w.key, p.Value, w.value)
		}
	}
	var extra []string
	for k := range got {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("unexpected series: %v", extra)
	}
}

// delta is the change of one series of one source between two readings.
func delta(t testing.TB, a, b Reading, source, key string) float64 {
	t.Helper()
	va, vb := value(t, a, source, key), value(t, b, source, key)
	return vb - va
}

// value is one series of one source in a reading.
func value(t testing.TB, r Reading, source, key string) float64 {
	t.Helper()
	for _, s := range r.Sources {
		if s.Name != source {
			continue
		}
		if !s.Up {
			t.Fatalf("source %s down: %s", source, s.Err)
		}
		for _, p := range s.Points {
			if p.Key() == key {
				return p.Value
			}
		}
		t.Fatalf("source %s has no %s", source, key)
	}
	t.Fatalf("no source %s in the reading", source)
	return 0
}

// busyCores is the machine's busy CPU (all modes but idle and iowait) in
// cores, from the rates of a system or node source.
func busyCores(sv SourceValues) float64 {
	busy := 0.0
	for _, m := range []string{"user", "nice", "system", "irq", "softirq", "steal"} {
		v, _ := sv.Sum("cpu_" + m + "_seconds_total")
		busy += v
	}
	return busy
}

func sourceValues(t testing.TB, rates []SourceValues, name string) SourceValues {
	t.Helper()
	for _, sv := range rates {
		if sv.Name == name {
			if !sv.Up {
				t.Fatalf("source %s down: %s", name, sv.Err)
			}
			return sv
		}
	}
	t.Fatalf("no source %s", name)
	return SourceValues{}
}

// attempts runs f up to n times until it returns nil; the live tests measure
// a machine that other programs may use at the same time, so a disturbed
// measurement is repeated rather than trusted. The last error fails t.
func attempts(t *testing.T, n int, f func() error) {
	t.Helper()
	var err error
	for i := 1; i <= n; i++ {
		if err = f(); err == nil {
			return
		}
		t.Logf("attempt %d/%d: %v", i, n, err)
	}
	t.Fatal(err)
}

// ---- fixtures

func TestSystemFixture(t *testing.T) {
	got := points(t, NewSystem("testdata/system"))
	checkPoints(t, got, systemFixtureWants())
}

// systemFixtureWants are the exact series of testdata/system.
func systemFixtureWants() []want {
	w := []want{
		{"cpus", Gauge, 2},
		{"context_switches_total", Counter, 86393164},
		{"interrupts_total", Counter, 19335488},
		{"forks_total", Counter, 40158},
		{"procs_running", Gauge, 5},
		{"procs_blocked", Gauge, 1},
		{"load1", Gauge, 0.18},
		{"load5", Gauge, 0.91},
		{"load15", Gauge, 1.09},
		{"memory_total_bytes", Gauge, 24684092 * 1024},
		{"memory_available_bytes", Gauge, 24367260 * 1024},
		{"memory_free_bytes", Gauge, 24385396 * 1024},
		{"memory_cached_bytes", Gauge, 121584 * 1024},
		{"memory_buffers_bytes", Gauge, 1312 * 1024},
		{"memory_used_bytes", Gauge, (24684092 - 24367260) * 1024},
		{"pages_in_total", Counter, 7651509},
		{"pages_out_total", Counter, 1504044},
		{"swap_in_pages_total", Counter, 3},
		{"swap_out_pages_total", Counter, 7},
		{"page_faults_total", Counter, 22313615},
		{"major_page_faults_total", Counter, 19807},
	}
	cpu := func(labels string, v ...float64) {
		for m, x := range v {
			k := cpuModeNames[m]
			if labels != "" {
				k += "{" + labels + "}"
			}
			w = append(w, want{k, Counter, x / 100})
		}
	}
	cpu("", 94540, 0, 191979, 444961, 41352, 0, 67003, 321)
	cpu("cpu=0", 46542, 0, 97464, 222530, 20594, 0, 33769, 162)
	cpu("cpu=1", 47998, 0, 94515, 222431, 20757, 0, 33233, 158)
	disk := func(dev string, reads, readSectors, writes, writtenSectors, ioMs float64) {
		l := "{dev=" + dev + "}"
		w = append(w,
			want{"disk_reads_total" + l, Counter, reads},
			want{"disk_writes_total" + l, Counter, writes},
			want{"disk_read_bytes_total" + l, Counter, readSectors * 512},
			want{"disk_written_bytes_total" + l, Counter, writtenSectors * 512},
			want{"disk_io_seconds_total" + l, Counter, ioMs / 1000})
	}
	// Not loop0, ram0, zram0 (excluded names) nor the partitions vda1 and
	// nvme0n1p1 (not in sys/block).
	disk("vda", 325442, 15081578, 18732, 3008056, 32312)
	disk("dm-0", 11, 330, 22, 440, 1500)
	disk("nvme0n1", 100, 2000, 200, 4000, 6000)
	disk("sr0", 7, 56, 0, 0, 9)
	net := func(ifname string, rb, rp, tb, tp float64) {
		l := "{if=" + ifname + "}"
		w = append(w,
			want{"net_receive_bytes_total" + l, Counter, rb},
			want{"net_receive_packets_total" + l, Counter, rp},
			want{"net_transmit_bytes_total" + l, Counter, tb},
			want{"net_transmit_packets_total" + l, Counter, tp})
	}
	net("lo", 67818074347, 264963756, 67818074347, 264963756)
	net("eth0", 36197730, 1501, 142984, 1183)
	net("veth0123abcd", 98765432109, 77, 12345, 66)
	// veth0123abcd at 10 Gbit/s; eth0 says -1 (unknown, as on the machine
	// the fixture was copied from); lo has no speed.
	w = append(w, want{"net_speed_bytes{if=veth0123abcd}", Gauge, 1.25e9})
	return w
}

// Without sys/block the names decide: partitions whose disk is present are
// left out, and the result is the same.
func TestSystemFixtureWithoutSysBlock(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/system/proc", filepath.Join(root, "proc"))
	copyTree(t, "testdata/system/sys/class", filepath.Join(root, "sys/class"))
	src := NewSystem(root) // no trailing slash: added
	for range 2 {          // the second time from the caches
		checkPoints(t, points(t, src), systemFixtureWants())
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSystemFixtureBroken(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/system", root)
	src := NewSystem(root + "/")
	if src.Name() != "system" {
		t.Errorf("Name %q", src.Name())
	}
	// Optional files missing: their series are left out.
	for _, f := range []string{"proc/loadavg", "proc/vmstat", "proc/diskstats", "proc/net/dev"} {
		os.Remove(filepath.Join(root, f))
	}
	got := points(t, src)
	for k := range got {
		if strings.HasPrefix(k, "load") || strings.HasPrefix(k, "disk_") || strings.HasPrefix(k, "net_") || strings.Contains(k, "page") {
			t.Errorf("series %s from a missing file", k)
		}
	}
	if got["cpus"].Value != 2 || got["memory_total_bytes"].Value != 24684092*1024 {
		t.Errorf("cpus %v, memory_total_bytes %v", got["cpus"], got["memory_total_bytes"])
	}
	// Required files: an error.
	os.WriteFile(filepath.Join(root, "proc/stat"), []byte("ctxt 5\n"), 0o644)
	if _, err := tryPoints(src); err == nil || !strings.Contains(err.Error(), "no \"cpu\" line") {
		t.Errorf("stat without cpu line: err %v", err)
	}
	os.Remove(filepath.Join(root, "proc/stat"))
	if _, err := tryPoints(src); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat missing: err %v", err)
	}
	copyTree(t, "testdata/system/proc", filepath.Join(root, "proc"))
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal: 1 kB\n"), 0o644)
	if _, err := tryPoints(src); err == nil {
		t.Error("meminfo without MemFree: no error")
	}
	// MemAvailable missing (Linux < 3.14): free + buffers + cached.
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 1 kB\nCached: 2 kB\n"), 0o644)
	got = points(t, src)
	if got["memory_available_bytes"].Value != 13*1024 || got["memory_used_bytes"].Value != 87*1024 {
		t.Errorf("without MemAvailable: available %v, used %v", got["memory_available_bytes"].Value, got["memory_used_bytes"].Value)
	}
	if _, err := tryPoints(NewSystem(t.TempDir())); err == nil {
		t.Error("empty root: no error")
	}
}

func TestDiskParent(t *testing.T) {
	for name, want := range map[string]string{
		"sda1": "sda", "sda": "", "vda15": "vda", "nvme0n1p2": "nvme0n1", "nvme0n1": "nvme0n",
		"mmcblk0p1": "mmcblk0", "mmcblk0": "mmcblk", "dm-0": "dm-", "md127": "md", "1": "", "": "", "p1": "p",
	} {
		if got := diskParent(name); got != want {
			t.Errorf("diskParent(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestParseHelpers(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "42": 42, "18446744073709551615": math.MaxUint64} {
		if v, ok := parseUint([]byte(s)); !ok || v != want {
			t.Errorf("parseUint(%q) = %v, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "-1", "1.5", "18446744073709551616", "99999999999999999999", "1a"} {
		if v, ok := parseUint([]byte(s)); ok {
			t.Errorf("parseUint(%q) = %v, ok", s, v)
		}
	}
	for s, want := range map[string]float64{"0.18": 0.18, "12": 12, "1.09": 1.09, "3.1e2": 310, "100.001": 100.001} {
		if v, ok := parseDecimal([]byte(s)); !ok || v != want {
			t.Errorf("parseDecimal(%q) = %v, %v", s, v, ok)
		}
	}
}

// ---- the live machine, against known loads

// machineSampler returns a sampler of the local machine and, optionally,
// more sources.
func machineSampler(more ...Source) *Sampler {
	return New(5*time.Second, append([]Source{NewSystem("/")}, more...)...)
}

// schedRun is the time a task has spent on a CPU so far, from the first
// field of /proc/<task>/schedstat (task is "PID/task/TID" for one thread, or
// "PID" for the sum over the process's live threads): the scheduler's own
// count in nanoseconds, kept apart from the tick-based utime and stime that
// the sources read, so it is an independent measure of the load a test made.
func schedRun(t testing.TB, task string) time.Duration {
	t.Helper()
	files := []string{"/proc/" + task + "/schedstat"}
	if !strings.Contains(task, "/") {
		files, _ = filepath.Glob("/proc/" + task + "/task/*/schedstat")
	}
	var sum time.Duration
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			t.Fatalf("%s: %q", name, b)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += time.Duration(ns)
	}
	if len(files) == 0 {
		t.Fatalf("no schedstat for %s", task)
	}
	return sum
}

// errStarved marks a measurement where the load itself did not get the CPU
// it asked for (other programs kept the machine busy).
var errStarved = errors.New("starved")

// knownLoad runs f up to three times, until it returns nil. An error
// wrapping errStarved on the last attempt passes the test with a note: the
// kernel's own count showed that the load could not be made, and f already
// checked the source against that count.
func knownLoad(t *testing.T, f func() error) {
	t.Helper()
	for i := 1; ; i++ {
		err := f()
		if err == nil {
			return
		}
		if i == 3 {
			if errors.Is(err, errStarved) {
				t.Logf("the machine was too busy to make the load on 3 attempts; the source agreed with the kernel's count (%v)", err)
				return
			}
			t.Fatal(err)
		}
		t.Logf("attempt %d/3: %v", i, err)
	}
}

// sampleBracketed takes one reading with s, between two readings of the
// scheduler's count for tasks (see schedRun): the counters a source read
// must lie between them, however long this test waited for a CPU.
func sampleBracketed(t *testing.T, s *Sampler, tasks ...string) (r Reading, before, after time.Duration, tBefore, tAfter time.Time) {
	t.Helper()
	count := func() (d time.Duration) {
		for _, task := range tasks {
			d += schedRun(t, task)
		}
		return d
	}
	tBefore, before = time.Now(), count()
	r = s.Sample(t.Context())
	after, tAfter = count(), time.Now()
	return r, before, after, tBefore, tAfter
}

// checkBracket fails unless a source's CPU seconds lie between the
// scheduler's counts read before and after it: /proc/PID/stat gives user
// and system time in ticks of 10 ms, each rounded down, so the source may
// be up to 10 ms below per tick count (perTick counts).
func checkBracket(t *testing.T, what string, cpu float64, before, after time.Duration, perTick int) {
	t.Helper()
	if cpu < before.Seconds()-0.0101*float64(perTick) || cpu > after.Seconds()+0.005 {
		t.Fatalf("%s: the source read %.3f s of CPU; the scheduler counted %.3f s before and %.3f s after", what, cpu, before.Seconds(), after.Seconds())
	}
}

// (a), machine side, and the process side: a shell loop burns one core,
// pinned to the last CPU. It runs at nice -20 where the test may raise
// priorities (root), so that other load on the machine does not take its
// core. Each reading of the process source must lie between the
// scheduler's counts (schedstat) read just before and after it, and the
// rate must be 1.0 ± 0.15 core when the spinner got its core (by the
// scheduler's count). On the machine side, the spinner's CPU must read as
// busy (0.95..1.02) whatever else runs, the whole machine at least as busy
// as that CPU, and, when the other CPUs stayed quiet, the machine's busy CPU
// must rise by 1 ± 0.25 core.
func TestLiveOneCoreSpinner(t *testing.T) {
	knownLoad(t, func() error {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
		s := machineSampler()
		ctx := t.Context()
		base0 := s.Sample(ctx)
		time.Sleep(700 * time.Millisecond)
		base1 := s.Sample(ctx)
		baseRates := sourceValues(t, Rates(base0, base1), "system")
		baseBusy := busyCores(baseRates)
		cpus := int(baseRates.Values["cpus"])
		last := cpus - 1

		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		pid := strconv.Itoa(cmd.Process.Pid)
		boosted := unix.Setpriority(unix.PRIO_PROCESS, cmd.Process.Pid, -20) == nil
		var set unix.CPUSet
		set.Set(last)
		if err := unix.SchedSetaffinity(cmd.Process.Pid, &set); err != nil {
			t.Fatalf("pinning the spinner to CPU %d: %v", last, err)
		}
		proc, err := NewProcess(ProcessSelector{PID: cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		s = machineSampler(proc)
		cpu := func(r Reading) float64 {
			return value(t, r, proc.Name(), "process_cpu_user_seconds_total") + value(t, r, proc.Name(), "process_cpu_system_seconds_total")
		}
		time.Sleep(100 * time.Millisecond)
		r0, b0, a0, tb0, _ := sampleBracketed(t, s, pid)
		time.Sleep(time.Second)
		r1, b1, a1, _, ta1 := sampleBracketed(t, s, pid)
		checkBracket(t, "first reading", cpu(r0), b0, a0, 2)
		checkBracket(t, "second reading", cpu(r1), b1, a1, 2)
		sched := (a1 - b0).Seconds() / ta1.Sub(tb0).Seconds()
		rates := Rates(r0, r1)
		pv := sourceValues(t, rates, proc.Name())
		sv := sourceValues(t, rates, "system")
		cores := pv.Values["process_cpu_user_seconds_total"] + pv.Values["process_cpu_system_seconds_total"]
		busy := busyCores(sv)
		busyLast := 0.0
		for _, m := range []string{"user", "nice", "system", "irq", "softirq", "steal"} {
			busyLast += sv.Values[fmt.Sprintf("cpu_%s_seconds_total{cpu=%d}", m, last)]
		}
		t.Logf("spinner on CPU %d (nice -20: %v): %.3f cores by the process source, about %.3f by schedstat; "+
			"CPU %d busy %.3f; machine busy %.3f of %d cores before, %.3f while spinning (+%.3f); process_count %v",
			last, boosted, cores, sched, last, busyLast, baseBusy, cpus, busy, busy-baseBusy, pv.Values["process_count"])
		if pv.Values["process_count"] != 1 {
			t.Fatalf("process_count %v, want 1", pv.Values["process_count"])
		}
		if busyLast < 0.95 || busyLast > 1.02 {
			t.Fatalf("CPU %d, running the spinner, read as %.3f busy", last, busyLast)
		}
		if busy < busyLast-0.02 || busy > float64(cpus)+0.02 {
			t.Fatalf("machine busy %.3f cores, with CPU %d alone %.3f busy", busy, last, busyLast)
		}
		if math.Abs(cores-1) > 0.15 {
			err := fmt.Errorf("spinner read as %.3f cores, want 1.0 ± 0.15", cores)
			if sched < 0.85 {
				err = fmt.Errorf("%w: %v (it ran %.3f of a core by schedstat)", errStarved, err, sched)
			}
			return err
		}
		if others := busy - busyLast; baseBusy < 0.3 && others < 0.3 {
			if rise := busy - baseBusy; math.Abs(rise-1) > 0.25 {
				return fmt.Errorf("machine busy CPU rose by %.3f cores (%.3f before, %.3f while spinning), want 1 ± 0.25", rise, baseBusy, busy)
			}
		} else {
			t.Logf("other programs kept the machine busy (%.3f cores before, %.3f on the other CPUs while spinning): the rise was not checked", baseBusy, others)
		}
		return nil
	})
}

// wholeDiskOf finds the whole disk holding dir (a partition's parent disk),
// through /proc/self/mountinfo and /sys/dev/block/MAJ:MIN. It returns "" if
// dir is not on a block device (tmpfs, overlay).
func wholeDiskOf(t *testing.T, dir string) (string, string) {
	t.Helper()
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return "", err.Error()
	}
	if sfs.Type == unix.TMPFS_MAGIC || sfs.Type == unix.OVERLAYFS_SUPER_MAGIC {
		return "", fmt.Sprintf("%s is on tmpfs or overlayfs", dir)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", err.Error()
	}
	maj, min := unix.Major(st.Dev), unix.Minor(st.Dev)
	// Cross-check with mountinfo, which names the device of the mount.
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	found := false
	for line := range strings.SplitSeq(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[2] == fmt.Sprintf("%d:%d", maj, min) {
			found = true
		}
	}
	if !found || maj == 0 {
		return "", fmt.Sprintf("%s: device %d:%d is not a mounted block device", dir, maj, min)
	}
	link, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", maj, min))
	if err != nil {
		return "", err.Error()
	}
	if _, err := os.Stat(filepath.Join(link, "partition")); err == nil {
		link = filepath.Dir(link)
	}
	name := filepath.Base(link)
	if _, err := os.Stat("/sys/block/" + name); err != nil {
		return "", fmt.Sprintf("%s is not in /sys/block", name)
	}
	return name, ""
}

// (b) N direct-I/O writes show in disk_writes_total of the disk written to.
func TestLiveDirectWrites(t *testing.T) {
	if _, err := exec.LookPath("dd"); err != nil {
		t.Skip("no dd")
	}
	var dir, disk string
	var why []string
	for _, cand := range []string{t.TempDir(), "/var/tmp", "."} {
		d, err := os.MkdirTemp(cand, "throng-dd-")
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		defer os.RemoveAll(d)
		if name, reason := wholeDiskOf(t, d); name != "" {
			dir, disk = d, name
			break
		} else {
			why = append(why, reason)
		}
	}
	if disk == "" {
		t.Skipf("no directory on a block device: %v", why)
	}
	const n = 200
	s := machineSampler()
	key := func(name string) string { return name + "{dev=" + disk + "}" }
	r0 := s.Sample(t.Context())
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(dir, "f"), "bs=4k",
		"count="+strconv.Itoa(n), "oflag=direct").CombinedOutput()
	if err != nil {
		t.Fatalf("dd: %v: %s", err, out)
	}
	r1 := s.Sample(t.Context())
	wall := r1.At.Sub(r0.At).Seconds()
	writes := delta(t, r0, r1, "system", key("disk_writes_total"))
	bytes := delta(t, r0, r1, "system", key("disk_written_bytes_total"))
	ioSec := delta(t, r0, r1, "system", key("disk_io_seconds_total"))
	t.Logf("%d direct 4 KiB writes to %s (disk %s): disk_writes_total +%.0f, written +%.0f bytes, io +%.3f s",
		n, dir, disk, writes, bytes, ioSec)
	if writes < n {
		t.Errorf("disk_writes_total rose by %.0f, want >= %d", writes, n)
	}
	if bytes < n*4096 {
		t.Errorf("disk_written_bytes_total rose by %.0f, want >= %d", bytes, n*4096)
	}
	// The time with I/O in flight is counted in jiffies (4 ms here): 200
	// fast writes may add nothing, but never more than the time they took.
	if ioSec < 0 || ioSec > wall+0.01 {
		t.Errorf("disk_io_seconds_total rose by %v s over %.3f s", ioSec, wall)
	}
}

// (c) M bytes over a loopback TCP connection show in the loopback counters.
func TestLiveLoopbackBytes(t *testing.T) {
	const m = 32 << 20
	attempts(t, 3, func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		got := make(chan int64, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				got <- -1
				return
			}
			defer c.Close()
			n, _ := io.Copy(io.Discard, c)
			got <- n
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s := machineSampler()
		r0 := s.Sample(t.Context())
		buf := make([]byte, 1<<20)
		for range m / len(buf) {
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		if n := <-got; n != m {
			t.Fatalf("server read %d bytes, want %d", n, m)
		}
		r1 := s.Sample(t.Context())
		rx := delta(t, r0, r1, "system", "net_receive_bytes_total{if=lo}")
		tx := delta(t, r0, r1, "system", "net_transmit_bytes_total{if=lo}")
		pk := delta(t, r0, r1, "system", "net_receive_packets_total{if=lo}")
		t.Logf("%d bytes over loopback: lo receive +%.0f bytes (%.2f%% more), transmit +%.0f, +%.0f packets",
			m, rx, 100*(rx-m)/m, tx, pk)
		if rx < m || tx < m || pk < 1 {
			t.Fatalf("lo counters rose by rx %.0f, tx %.0f bytes, %.0f packets, want >= %d bytes", rx, tx, pk, m)
		}
		if rx > 1.25*m {
			return fmt.Errorf("lo receive rose by %.0f for %d bytes sent (other traffic?)", rx, m)
		}
		return nil
	})
}

// ---- benchmarks

func benchmarkSource(b *testing.B, src Source) {
	ctx := context.Background()
	n := 0
	emit := func(Point) { n++ }
	if err := src.Sample(ctx, emit); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := src.Sample(ctx, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N+1), "points/op")
}

func BenchmarkSystemSample(b *testing.B) { benchmarkSource(b, NewSystem("/")) }
