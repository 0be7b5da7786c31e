package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is a server's main process: a direct child of this process that
// leads its own process group (Setpgid), watched by exactly one goroutine.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed after the process has been reaped

	mu      sync.Mutex // held while the group is signalled and while reaping
	reaped  bool
	waitErr error // cmd.Wait's result; read only after done is closed
}

// startProcess starts bin with args in dir as a new process group leader, with
// stdin from /dev/null and stdout and stderr appended to outPath. It returns
// once the process has been started; a goroutine waits for its exit.
func startProcess(dir, outPath, bin string, args ...string) (*process, error) {
	out, err := os.OpenFile(outPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy after Start
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

// wait observes the exit of the main process once. Where the platform allows
// it, it first waits without reaping: the exited leader then still holds its
// PID, so its process group ID cannot have been reused, and whatever is left
// in the group (e.g. workers orphaned by a crashed master) can be killed
// safely before the leader is reaped.
func (p *process) wait() {
	exited := waitExitedNoReap(p.pid)
	p.mu.Lock()
	if exited {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // ESRCH when the group is empty: fine
	}
	p.waitErr = p.cmd.Wait()
	p.reaped = true
	p.mu.Unlock()
	close(p.done)
}

// killGroup sends SIGKILL to the whole process group, but only while the
// leader is not reaped (so the group is certainly ours).
func (p *process) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// stop sends sig to the main process and waits up to timeout for its exit;
// after that it kills the process group and waits for the exit again. It
// returns an error when the process had to be killed.
func (p *process) stop(sig syscall.Signal, timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	// os.Process.Signal uses a pidfd on Linux: it cannot hit a reused PID.
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.killGroup()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		p.awaitGroup(groupGrace)
		return nil
	case <-t.C:
	}
	p.killGroup()
	return p.waitKilled(fmt.Errorf("pid %d did not exit within %v of %v; killed its process group", p.pid, timeout, sig))
}

// abort ends a process that failed to start properly: SIGTERM (whose default
// action, before a server installs its handlers, terminates without a core
// dump; nginx's handler is its fast shutdown, which reaps its workers), then
// SIGKILL to the group if it does not exit soon. Killing the group at once
// would leave the workers as zombies until PID 1 reaps them.
func (p *process) abort() error {
	return p.stop(syscall.SIGTERM, time.Second)
}

// groupGrace is how long the rest of a process group may outlive its
// leader's exit before it is killed.
const groupGrace = 250 * time.Millisecond

// awaitGroup waits up to timeout, after the leader exited, for the rest of
// its process group (smbd's helpers and per-connection children notice
// their parent's exit only a moment later, or not at all) to go, then
// kills what is left. The group's
// id cannot be taken by another group while one of its members lives, so
// while kill(-pgid, 0) finds members they are ours.
func (p *process) awaitGroup(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for syscall.Kill(-p.pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *process) waitKilled(err error) error {
	select {
	case <-p.done:
		return err
	case <-time.After(StopTimeout):
		return errors.Join(err, fmt.Errorf("pid %d still not reaped %v after SIGKILL", p.pid, StopTimeout))
	}
}
