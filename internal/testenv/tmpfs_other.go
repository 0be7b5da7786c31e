//go:build !linux

package testenv

import (
	"os"
	"testing"
)

// Tmpfs is Linux's (a real small disk to fill); elsewhere the test is
// skipped, or fails when CI is set.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal("tmpfs mounts are Linux's")
	}
	t.Skip("tmpfs mounts are Linux's; skipping")
	return ""
}

// Fill is Linux's, as Tmpfs.
func Fill(t testing.TB, dir string, free int64) string {
	t.Helper()
	t.Skip("Fill is Linux's")
	return ""
}
