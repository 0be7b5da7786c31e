// Package testenv starts real servers (nginx first) on the loopback interface
// for throng's tests, benchmarks and manual runs.
//
// Every server runs as a direct child of the calling process, in a process
// group of its own, with a private configuration and all its data in a fresh
// temporary directory. It listens on 127.0.0.1 only, on a port chosen at run
// time. A server counts as ready only when it answered a probe that only this
// very server can answer (for nginx: a file holding a random per-start token)
// while the child process is still running; an open port alone proves nothing,
// because another process may hold it.
//
// Nothing here ever signals a process that this package did not start: the
// server's main process is signalled through its os.Process handle, and its
// process group only while the main process is not yet reaped, so that the
// group ID cannot belong to anyone else.
//
// The package needs Linux for full guarantees (waitid with WNOWAIT, see
// proc_linux.go); on other Unix systems it works without the final sweep of
// the process group after the main process exits by itself.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopTimeout is how long Stop waits for a server's main process to exit
// after the graceful stop signal before it kills the whole process group.
const StopTimeout = 5 * time.Second

// Server is a running server started by this package (for example by
// StartNginx). Its exported fields are fixed once the start function returns
// and may be read from any goroutine. Stop it exactly as it was started: by
// calling Stop, which is safe to call more than once and concurrently.
type Server struct {
	// Name is the kind of server, e.g. "nginx".
	Name string
	// Addr is the listening address, "127.0.0.1:PORT".
	Addr string
	// URL is the base URL for HTTP servers, "http://127.0.0.1:PORT" (no
	// trailing slash); empty for servers that do not speak HTTP.
	URL string
	// TLSURL and H2CURL are nginx's further listeners when
	// NginxOptions.HTTP2 is set: HTTPS with HTTP/2 offered by ALPN (a
	// self-signed certificate for 127.0.0.1, CAFile), and HTTP/2 without
	// TLS (prior knowledge only: no HTTP/1.1 there). Empty otherwise.
	TLSURL, H2CURL string
	// CAFile is the PEM file of the certificate TLSURL presents.
	CAFile string
	// Dir is the server's private temporary directory (configuration, logs,
	// data, web root). Stop removes it.
	Dir string
	// PID is the process ID of the server's main (master) process, a direct
	// child of this process and the leader of its own process group.
	PID int
	// ErrorLog is the path of the server's own log file inside Dir (nginx:
	// Dir/error.log). It disappears with Dir on Stop.
	ErrorLog string
	// MonitorURL is nats-server's HTTP monitoring endpoint,
	// "http://127.0.0.1:PORT", with NATSServerOptions.Monitor; else empty.
	MonitorURL string

	proc       *process
	stopSignal syscall.Signal // graceful stop signal for the main process
	stopOnce   sync.Once
	stopErr    error
}

// Alive reports whether the server's main process is still running, that is,
// it has not exited (Alive becomes false as soon as the exit is observed, a
// zombie counts as exited). It does not block.
func (s *Server) Alive() bool {
	if s == nil || s.proc == nil {
		return false
	}
	select {
	case <-s.proc.done:
		return false
	default:
		return true
	}
}

// Done returns a channel that is closed once the server's main process has
// exited and been reaped, whether because of Stop or on its own.
func (s *Server) Done() <-chan struct{} {
	return s.proc.done
}

// LogTail returns up to the last n lines of the server's ErrorLog (empty if
// the log is empty or already removed). Useful in test failure messages.
func (s *Server) LogTail(n int) string {
	return tailFile(s.ErrorLog, n)
}

// Stop stops the server and removes its directory. It sends the server's
// graceful stop signal (nginx: SIGQUIT) to the main process, waits up to
// StopTimeout for it to exit, then sends SIGKILL to the server's process
// group and waits for the exit. When Stop returns, the main process has been
// reaped (so no zombie and no /proc entry remains), every process left in its
// process group has been sent SIGKILL, and Dir has been removed.
//
// Stop is idempotent: later and concurrent calls wait for the first one and
// return its result. It returns an error if the server had already exited by
// itself before Stop (the error includes the end of its log), if it had to be
// killed, or if Dir could not be removed.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.proc != nil {
			if !s.Alive() {
				<-s.proc.done
				errs = append(errs, fmt.Errorf("testenv: %s (pid %d) had exited before Stop (%v)%s",
					s.Name, s.PID, exitDesc(s.proc.waitErr), logSuffix(s.ErrorLog)))
			} else if err := s.proc.stop(s.stopSignal, StopTimeout); err != nil {
				errs = append(errs, fmt.Errorf("testenv: %s: %w%s", s.Name, err, logSuffix(s.ErrorLog)))
			}
		}
		if s.Dir != "" {
			if err := os.RemoveAll(s.Dir); err != nil {
				errs = append(errs, fmt.Errorf("testenv: %s: removing %s: %w", s.Name, s.Dir, err))
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// FindBinary returns the path of the executable name, looked up first in
// PATH (exec.LookPath) and then at each of paths in order (for example
// "/usr/sbin/nginx", since PATH often lacks /usr/sbin for non-root users).
func FindBinary(name string, paths ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	where := "PATH"
	if len(paths) > 0 {
		where += " or " + strings.Join(paths, ", ")
	}
	return "", fmt.Errorf("testenv: %q not found in %s", name, where)
}

// newPrivateDir creates a fresh directory under os.TempDir() and makes it
// traversable by everyone (0755), because servers started as root drop their
// workers to unprivileged users (nginx: nobody) that must reach the files.
func newPrivateDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "throng-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("testenv: %s: %w", name, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("testenv: %s: %w", name, err)
	}
	return dir, nil
}

// tailFile returns up to the last n lines of the file at path ("" on error).
func tailFile(path string, n int) string {
	if path == "" || n <= 0 {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const maxBytes = 16 << 10
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logSuffix formats the tail of each non-empty log for an error message.
func logSuffix(paths ...string) string {
	var sb strings.Builder
	for _, p := range paths {
		if t := tailFile(p, 20); strings.TrimSpace(t) != "" {
			fmt.Fprintf(&sb, "\n--- tail of %s ---\n%s", filepath.Base(p), t)
		}
	}
	return sb.String()
}

func exitDesc(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
