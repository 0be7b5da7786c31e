package benchkit

import (
	"os/exec"
	"testing"
	"time"
)

// Tree counts what a grandchild spends that no wait4 reports: CPU burnt
// by a process its parent never waits for, and the resident memory of a
// process under the root.
func TestTreeSeesGrandchildren(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	// The background loop runs 0.6 s; sh exits 1 s in without waiting
	// for it, and the python3 holding 64 MiB lives 0.8 s.
	cmd := exec.Command("sh", "-c", `timeout 0.6 sh -c 'while :; do :; done' &
python3 -c 'import time; b = bytearray(64 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(0.8)'
sleep 0.2`)
	tr, err := RunTree(cmd, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := tr.CPU(nil); cpu < 0.05 {
		t.Errorf("tree CPU %.2f s, want the busy loop's (up to 0.6 s)", cpu)
	}
	if rss := tr.PeakRSS(nil); rss < 64<<20 {
		t.Errorf("tree peak RSS %d, want at least python3's 64 MiB", rss)
	}
}
