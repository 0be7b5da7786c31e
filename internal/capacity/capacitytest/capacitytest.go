// Package capacitytest holds what the end-to-end tests of a capacity
// search share, in the library (internal/capacity) and through the
// command (internal/cli): the cases against the capacity-truth target
// with their exact truths (from package oracle), and Boost, which keeps
// the generator's threads from waiting for a CPU on a shared machine.
package capacitytest

import (
	"os"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/capacity/oracle"
	"golang.org/x/sys/unix"
)

// Open is Poisson arrivals to 8 workers each holding a request exactly
// 20 ms (M/D/8), judged on the mean response time: the search must find
// the highest rate whose mean is under 25 ms.
var Open = struct {
	Workers int
	Service time.Duration
	SLO     string
	Limit   float64 // s
}{8, 20 * time.Millisecond, "mean < 25ms", 0.025}

// OpenTruth is the Open case's true capacity in requests per second: the
// exact simulation of the target's model (oracle.MaxOpenRate), checked
// against the M/D/c embedded Markov chain's exact mean (their relative
// difference is returned as check: under 1 % when both are right).
func OpenTruth() (truth, check float64, err error) {
	st := oracle.Station{Workers: Open.Workers, Service: Open.Service.Seconds()}
	truth, err = oracle.MaxOpenRate(st, 0, Open.Limit, true, 400_000, 1, 1e-5)
	if err != nil {
		return 0, 0, err
	}
	exact, err := oracle.MDcMeanResponse(Open.Workers, truth, Open.Service.Seconds())
	if err != nil {
		return 0, 0, err
	}
	return truth, exact/Open.Limit - 1, nil
}

// Closed is closed users thinking 180 ms (exponential) in front of 8
// workers holding each request an exponential time of mean 20 ms, judged
// on the mean response time (under 60 ms).
var Closed = struct {
	Workers int
	Service time.Duration
	Think   time.Duration
	SLO     string
	Limit   float64 // s
}{8, 20 * time.Millisecond, 180 * time.Millisecond, "mean < 60ms", 0.060}

// ClosedTruth is the Closed case's truths: the most users meeting the
// SLO by exact mean value analysis (95), and the knee N* = (W/S)·(S+Z)
// (80 users).
func ClosedTruth() (users int, knee float64, err error) {
	st := oracle.Station{Workers: Closed.Workers, Service: Closed.Service.Seconds(), Exponential: true}
	users, err = oracle.MaxUsers(st, Closed.Think.Seconds(), Closed.Limit)
	return users, oracle.Knee(st, Closed.Think.Seconds()), err
}

// Boost puts every thread of this process in the real-time class
// (SCHED_RR, priority 1) where it may (as root), so that the other
// processes of a shared machine do not keep the generator (and a target
// in this process) waiting for a CPU: at nice −20 its threads still
// waited for one 60 to 95 % of the short times they had work on a machine
// kept busy by others, and the generator's guard rightly marked the steps
// bound. The threads made later inherit the class from the ones that make
// them. Its load is a few % of a core; the kernel keeps 5 % of the CPU
// for the other classes whatever. It returns the function that puts every
// thread back, and whether it could. The guard still judges every step: a
// step it finds bound is invalid, boosted or not.
func Boost() (undo func(), ok bool) {
	old := map[int]unix.SchedAttr{}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue
		}
		if unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_RR, Priority: 1}, 0) == nil {
			old[tid] = *a
		}
	}
	return func() {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				a, ok := old[tid]
				if !ok {
					a = unix.SchedAttr{Policy: unix.SCHED_NORMAL}
				}
				unix.SchedSetAttr(tid, &a, 0)
			}
		}
	}, len(old) > 0
}
