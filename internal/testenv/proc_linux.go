package testenv

import (
	"syscall"
	"unsafe"
)

const pPID = 1 // P_PID for waitid(2)

// waitExitedNoReap blocks until the child pid has exited, without reaping it
// (waitid with WNOWAIT). It reports false if that was not possible, in which
// case the caller must not assume the child has exited.
func waitExitedNoReap(pid int) bool {
	var siginfo [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}
