// Package benchkit holds what the peer benchmarks under bench/ share: the
// lock that keeps two benchmarks on one machine from measuring at the same
// time, medians, and the machine's core count.
package benchkit

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockFile serialises timed measurements between the benchmarks run on
// this machine (bench/mail and bench/pubsub take it): a measurement never
// overlaps another's load.
const LockFile = "/tmp/throng-bench.lock"

// Locked runs f holding an exclusive flock on LockFile, says on stderr
// (prefixed with tag) when it waited over a second for it, and after the
// unlock pauses a second so a waiting benchmark gets its turn.
func Locked(tag string, f func()) error {
	fd, err := syscall.Open(LockFile, syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	t0 := time.Now()
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		return err
	}
	defer time.Sleep(time.Second)
	defer syscall.Flock(fd, syscall.LOCK_UN)
	if w := time.Since(t0); w > time.Second {
		fmt.Fprintf(os.Stderr, "%s: waited %v for %s\n", tag, w.Round(time.Second), LockFile)
	}
	f()
	return nil
}

// Median is the middle of xs (the mean of the two middle ones); 0 for none.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Cores is the number of CPUs this process may use.
func Cores() int { return runtime.NumCPU() }

// MedianOf is the median of f over xs (a figure of each round's sample).
func MedianOf[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return Median(v)
}

// Ratios prints ratios with prec decimals, space-separated in brackets:
// "[1.12 1.07 1.15]".
func Ratios(v []float64, prec int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', prec, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
