package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spec declares one kind of server: what start needs to know besides the
// files of one start (see launch). Every server of this package is a spec
// and a configure function; start is the one skeleton they share: the
// binary looked up, a fresh private directory, the configuration written,
// the process started in its own group, the readiness probe polled while
// that very process runs, and on any failure the process aborted and the
// directory removed, with the end of its logs in the error.
type spec struct {
	name  string   // Server.Name, the directory's prefix, messages
	bin   string   // the executable, looked up in PATH, then in paths
	paths []string //
	// ready bounds the wait for one start's probe to succeed; poll is
	// the pause between probes.
	ready, poll time.Duration
	// stop is the graceful stop signal (0: SIGTERM).
	stop syscall.Signal
	// inUse are the texts by which the server's logs say the port was
	// taken: the start is then tried again on another port.
	inUse []string
}

// launch is one start, as a spec's configure function declares it once
// the files are written.
type launch struct {
	// exe is the program to run (empty: the spec's binary found), args
	// its arguments.
	exe  string
	args []string
	// out takes the process's stdout and stderr (empty: Dir/NAME.log);
	// errorLog is Server.ErrorLog (empty: out); logs are further files the
	// server writes: all are searched for inUse and tailed in errors.
	out, errorLog string
	logs          []string
	// addr and url are Server.Addr and Server.URL.
	addr, url string
	// noFile, when above 0, raises the process's open-file limit (see
	// raiseNoFile) as soon as it runs.
	noFile int
	// probe reports nil once the server answered as only this start's
	// server can (a per-start token, a configured name): an open port
	// proves nothing. A probeFatal error ends the wait at once.
	probe func(ctx context.Context) error
}

// configure writes the files of one start into dir (the server's, fresh)
// for port, and declares the start. ctx is the start's, bin the spec's
// binary found.
type configure func(ctx context.Context, bin, dir string, port int) (launch, error)

// probeFatal marks a probe error that waiting longer cannot cure.
type probeFatal struct{ error }

func (e probeFatal) Unwrap() error { return e.error }

// start starts the server: on port when it is not 0, else on a port from
// nextPort (FreePort when nil), tried again on another one, 5 in all,
// while the server finds it taken. ctx governs the start only: the
// server runs until Stop.
func (sp *spec) start(ctx context.Context, port int, nextPort func() (int, error), conf configure) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testenv: %s: not started: %w", sp.name, err)
	}
	bin, err := FindBinary(sp.bin, sp.paths...)
	if err != nil {
		return nil, err
	}
	once := func(port int) (*Server, error) { return sp.startOnce(ctx, bin, port, conf) }
	if port != 0 {
		return once(port)
	}
	return onFreePort(sp.name, nextPort, once)
}

// startOnce is one start on port.
func (sp *spec) startOnce(ctx context.Context, bin string, port int, conf configure) (_ *Server, err error) {
	dir, err := newPrivateDir(sp.name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	l, err := conf(ctx, bin, dir, port)
	if err != nil {
		if strings.HasPrefix(err.Error(), "testenv: ") {
			return nil, err
		}
		return nil, fmt.Errorf("testenv: %s: %w", sp.name, err)
	}
	proc, err := sp.run(ctx, dir, &l)
	if err != nil {
		return nil, err
	}
	stop := sp.stop
	if stop == 0 {
		stop = syscall.SIGTERM
	}
	return &Server{Name: sp.name, Addr: l.addr, URL: l.url, Dir: dir, PID: proc.pid, ErrorLog: l.errorLog,
		proc: proc, stopSignal: stop}, nil
}

// run starts the process l declares in dir and waits for it to be ready;
// it fills in l's defaults (the spec's binary, the log paths). A restart calls it again with the
// same launch, on the same directory (see DovecotServer.Restart). On
// failure the process is aborted.
func (sp *spec) run(ctx context.Context, dir string, l *launch) (*process, error) {
	if l.exe == "" {
		bin, err := FindBinary(sp.bin, sp.paths...)
		if err != nil {
			return nil, err
		}
		l.exe = bin
	}
	if l.out == "" {
		l.out = filepath.Join(dir, sp.name+".log")
	}
	if l.errorLog == "" {
		l.errorLog = l.out
	}
	logs := append([]string{l.errorLog}, l.logs...)
	if l.out != l.errorLog {
		logs = append(logs, l.out)
	}
	// The logs are searched only past what they held before: a restart
	// reuses them.
	from := make([]int64, len(logs))
	for i, path := range logs {
		from[i] = fileSize(path)
	}
	proc, err := startProcess(dir, l.out, l.exe, l.args...)
	if err != nil {
		return nil, fmt.Errorf("testenv: %s: starting %s: %w", sp.name, l.exe, err)
	}
	if l.noFile > 0 {
		raiseNoFile(proc.pid, l.noFile)
	}
	if err := sp.waitReady(ctx, proc, l.probe, logs, from); err != nil {
		proc.abort()
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("testenv: %s: %s: %w", sp.name, l.addr, err)
		}
		return nil, fmt.Errorf("testenv: %s on %s (pid %d) did not become ready: %w%s", sp.name, l.addr, proc.pid, err, logSuffix(logs...))
	}
	return proc, nil
}

// waitReady polls probe until it succeeds while proc still runs, the logs
// say the port was taken (errAddrInUse), proc exited, or the spec's ready
// time or ctx ran out.
func (sp *spec) waitReady(ctx context.Context, proc *process, probe func(context.Context) error, logs []string, from []int64) error {
	ctx, cancel := context.WithTimeout(ctx, sp.ready)
	defer cancel()
	tick := time.NewTicker(sp.poll)
	defer tick.Stop()
	var last error
	for {
		err := probe(ctx)
		var fatal probeFatal
		switch {
		case errors.As(err, &fatal):
			return fatal.error
		case err != nil:
			last = err
		default:
			select {
			case <-proc.done:
				last = fmt.Errorf("answered the readiness probe, but the %s started here has exited: someone else serves this port", sp.name)
			default:
				return nil
			}
		}
		if sp.portTaken(logs, from) {
			return errAddrInUse
		}
		select {
		case <-proc.done:
			if sp.portTaken(logs, from) { // written just before it exited
				return errAddrInUse
			}
			return fmt.Errorf("%s exited during start (%s)", sp.name, exitDesc(proc.waitErr))
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last probe: %v", context.Cause(ctx), last)
		case <-proc.done: // reported on the next round, after a last look at the logs
		case <-tick.C:
		}
	}
}

// portTaken reports whether a log says, past from, that the port was
// taken.
func (sp *spec) portTaken(logs []string, from []int64) bool {
	for i, l := range logs {
		for _, s := range sp.inUse {
			if logContainsAfter(l, from[i], s) {
				return true
			}
		}
	}
	return false
}

// started is the test form of a start: it skips the test, or fails it
// with CI set, when sp's binary is missing (RequireBinary), fails it when
// the server does not start, and stops the server at the test's cleanup
// (a failing Stop is reported with t.Errorf). Call it from the test
// goroutine.
func started[S interface{ Stop() error }](t testing.TB, sp *spec, start func(context.Context) (S, error)) S {
	t.Helper()
	RequireBinary(t, sp.bin, sp.paths...)
	s, err := start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping %s: %v", sp.name, err)
		}
	})
	return s
}

// probeClient is the HTTP client of readiness probes: no proxy, no pooled
// connections.
func probeClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}
