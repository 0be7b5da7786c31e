package sampler

// This file holds the "generator" source: throng's own process.

import (
	"context"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// NewGenerator returns the source "generator": this process (os.Getpid()),
// with the same process_* series as NewProcess (process_count is 1), so the
// load generator's cost can be set beside the server's.
//
// Unlike NewProcess it reads the process alone, without descendants and
// without the times of reaped children: servers that throng starts itself
// (internal/testenv) are its children, and their CPU must not be charged to
// the generator when they are reaped. CPU time, faults and context switches
// come from getrusage(RUSAGE_SELF), which covers every thread including
// exited ones, at microsecond resolution; rss, virtual size and threads from
// /proc/PID/stat; read and write bytes from /proc/PID/io (left out when it
// cannot be read); fds from /proc/PID/fd, not counting the descriptor used
// to list it. Sample fails only if getrusage or /proc/PID/stat fails.
func NewGenerator() Source {
	pid := os.Getpid()
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	return &generator{
		sem:      make(chan struct{}, 1),
		pStat:    cpath(dir + "stat"),
		pIO:      cpath(dir + "io"),
		pFD:      cpath(dir + "fd"),
		pageSize: uint64(os.Getpagesize()),
	}
}

type generator struct {
	sem             chan struct{}
	pStat, pIO, pFD []byte
	pageSize        uint64
	buf, dirBuf     []byte
}

func (g *generator) Name() string { return "generator" }

func (g *generator) Sample(ctx context.Context, emit func(Point)) error {
	if err := acquire(ctx, g.sem); err != nil {
		return err
	}
	defer func() { <-g.sem }()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return os.NewSyscallError("getrusage", err)
	}
	b, err := readRecordAt(unix.AT_FDCWD, g.pStat, &g.buf)
	if err != nil {
		return err
	}
	var e procEntry
	if !parseProcStat(b, &e) {
		return &os.PathError{Op: "parse", Path: pathString(g.pStat), Err: errBadStat}
	}
	t := groupTotals{
		user:    uint64(ru.Utime.Sec)*1e6 + uint64(ru.Utime.Usec),
		system:  uint64(ru.Stime.Sec)*1e6 + uint64(ru.Stime.Usec),
		minflt:  uint64(ru.Minflt),
		majflt:  uint64(ru.Majflt),
		vol:     uint64(ru.Nvcsw),
		invol:   uint64(ru.Nivcsw),
		rss:     e.rss * g.pageSize,
		vsize:   e.vsize,
		threads: e.threads,
		count:   1,
	}
	if b, err := readRecordAt(unix.AT_FDCWD, g.pIO, &g.buf); err == nil {
		t.readBytes, t.writeBytes, t.haveIO = parseIO(b)
	}
	if n, ok := countFDs(unix.AT_FDCWD, g.pFD, &g.dirBuf); ok && n > 0 {
		t.fds, t.haveFDs = n-1, true // less the descriptor that listed the directory
	}
	t.emit(emit, 1e6)
	return nil
}

var errBadStat = errors.New("unexpected format")
