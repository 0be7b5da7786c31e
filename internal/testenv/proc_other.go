//go:build unix && !linux

package testenv

// waitExitedNoReap is not implemented here: the caller then reaps the process
// directly and skips the sweep of its process group after an exit on its own.
func waitExitedNoReap(pid int) bool { return false }
