package sampler

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
