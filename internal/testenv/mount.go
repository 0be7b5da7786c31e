package testenv

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// DevFull mounts /dev/full on path (created empty) until the test ends:
// every write to path then fails with ENOSPC, like a full disk, without a
// symbolic link (which code that refuses links would refuse). A bind mount
// needs root: CI runs as root, and fails the test without it; elsewhere it
// is skipped.
func DevFull(t testing.TB, path string) {
	t.Helper()
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("a bind mount of /dev/full needs root; CI runs as root")
		}
		t.Skip("a bind mount of /dev/full needs root")
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/dev/full", path, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("mount --bind /dev/full %s: %v", path, err)
	}
	t.Cleanup(func() { unix.Unmount(path, unix.MNT_DETACH) })
}
