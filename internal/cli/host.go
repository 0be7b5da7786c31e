package cli

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// hostInfo describes this machine for the result's metadata.
func hostInfo() result.Host {
	h := result.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: sampler.Cores(), GoMaxProcs: runtime.GOMAXPROCS(0)}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if m, ok := sampler.ReadMemory("/"); ok {
		h.MemoryBytes = uint64(m.Total)
	}
	return h
}
