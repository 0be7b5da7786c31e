package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs of size bytes (rounded up to pages by the kernel) on
// a new directory of the test's temporary directory and unmounts it when the
// test ends: a real small disk, to fill. Mounting needs CAP_SYS_ADMIN (root);
// without it the test is skipped, unless CI is set: then it fails, as in
// RequireBinary.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount -t tmpfs on %s: %v (the test needs a real small disk: run it as root)", dir, err)
		}
		t.Skipf("mount -t tmpfs on %s: %v: this test needs root to mount a small disk; skipping (with CI set this is a failure)", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			// A file still open in it: detach now, freed when closed.
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", dir, err)
			}
		}
	})
	return dir
}

// Fill writes a file in dir that leaves about free bytes of its file
// system free, and returns its path (remove it to free the space).
func Fill(t testing.TB, dir string, free int64) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	if avail <= free {
		t.Fatalf("%s has %d bytes free, not more than %d", dir, avail, free)
	}
	p := filepath.Join(dir, "filler")
	if err := os.WriteFile(p, make([]byte, avail-free), 0o644); err != nil {
		t.Fatalf("filling %s: %v", dir, err)
	}
	return p
}
