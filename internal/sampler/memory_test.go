package sampler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The memory a process may take: MemAvailable, or less under a cgroup
// limit (v2 or v1); no limit (v1's huge number, v2's "max") is ignored.
func TestReadMemory(t *testing.T) {
	meminfo := "MemTotal:       24684096 kB\nMemFree:  1000 kB\nMemAvailable:   23977468 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		avail int64
		src   string
	}{
		{"no cgroup limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n", "sys/fs/cgroup/memory.current": "1000\n"}, 23977468 << 10, "MemAvailable"},
		{"v2 limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/job\n",
			"sys/fs/cgroup/job/memory.max": "1073741824\n", "sys/fs/cgroup/job/memory.current": "73741824\n"}, 1000000000, "cgroup"},
		{"v1 limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/a/b\n0::/\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "2000000000\n", "sys/fs/cgroup/memory/a/b/memory.usage_in_bytes": "500000000\n"}, 1500000000, "cgroup"},
		{"v1 without limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n", "sys/fs/cgroup/memory/memory.usage_in_bytes": "5\n"}, 23977468 << 10, "MemAvailable"},
		{"limit above MemAvailable", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "99999999999999\n", "sys/fs/cgroup/memory.current": "0\n"}, 23977468 << 10, "MemAvailable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, c.files)
			m, ok := ReadMemory(root)
			if !ok || m.Available != c.avail || m.Total != 24684096<<10 || !strings.Contains(m.Source, c.src) {
				t.Errorf("%+v %v, want available %d from %s", m, ok, c.avail, c.src)
			}
		})
	}
	if _, ok := ReadMemory(t.TempDir()); ok {
		t.Error("read memory from an empty root")
	}
	if m, ok := ReadMemory("/"); !ok || m.Available <= 0 || m.Available > m.Total {
		t.Errorf("this machine: %+v %v", m, ok)
	}
}
