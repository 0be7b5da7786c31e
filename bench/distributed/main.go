// Command distributed measures throng's distributed mode on one machine,
// against one nginx (1 worker):
//
//  1. the IIS study's situation: the web-static load from one generator process
//     (one event-loop thread) vs the same load split over 2 agents;
//
//  2. the overhead of distribution: the same count-bound plan in 1 process
//     vs over 4 agents (segments 1/4..4/4): total client CPU, and whether
//     the results agree (the counts must be equal);
//
//  3. the start skew of the agents (the start barrier), over several runs.
//
//     go run ./bench/distributed -rounds 3
//
// Client CPU is read from /proc/PID/stat of every throng process (the
// controller and the agents) before and after each run.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

var bin, tmp, token string

func main() {
	rounds := flag.Int("rounds", 3, "rounds of each measurement")
	users := flag.Int("users", 10, "sessions (the IIS study: 10)")
	iters := flag.Int("iterations", 20000, "requests per session")
	flag.Parse()
	var err error
	tmp, err = os.MkdirTemp("", "bench-distributed-")
	check(err)
	defer os.RemoveAll(tmp)
	bin = filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	token = filepath.Join(tmp, "token")
	check(os.WriteFile(token, []byte("bench-token-0123456789abcdef\n"), 0o600))
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{Workers: 1, KeepaliveRequests: 100_000_000})
	check(err)
	defer ng.Stop()
	agents := startAgents(4)
	defer func() {
		for _, a := range agents {
			a.Process.Signal(syscall.SIGTERM)
			a.Wait()
		}
	}()
	addrs := func(n int) string {
		var s []string
		for i := 0; i < n; i++ {
			s = append(s, fmt.Sprintf("127.0.0.1:%d", 17800+i))
		}
		return strings.Join(s, ",")
	}
	load := []string{"run", "web-static", "--target", ng.URL, "--users", strconv.Itoa(*users), "--iterations", strconv.Itoa(*iters), "--threads", "1", "-q"}
	fmt.Printf("nginx %s (1 worker); %d sessions x %d requests; %d rounds\n\n", ng.URL, *users, *iters, *rounds)

	fmt.Println("1. one generator vs 2 agents (each one event-loop thread)")
	fmt.Printf("%-12s %10s %12s %16s %14s\n", "", "req/s", "client CPU s", "client-bound int", "req/s ratio")
	var skews []float64
	for r := 0; r < *rounds; r++ {
		one := measure(agents, append(load, "-o", filepath.Join(tmp, "one.json"))...)
		two := measure(agents, append(load, "--agents", addrs(2), "--token-file", token, "-o", filepath.Join(tmp, "two.json"))...)
		fmt.Printf("%-12s %10.0f %12.2f %16d\n", "1 process", one.rate, one.cpu, one.bound)
		fmt.Printf("%-12s %10.0f %12.2f %16d %14.2f\n", "2 agents", two.rate, two.cpu, two.bound, two.rate/one.rate)
		skews = append(skews, two.skews...)
	}

	fmt.Println("\n2. overhead: the same plan in 1 process vs over 4 agents")
	fmt.Printf("%-12s %10s %12s %14s %10s\n", "", "requests", "client CPU s", "CPU-µs / req", "equal")
	for r := 0; r < *rounds; r++ {
		one := measure(agents, append(load, "-o", filepath.Join(tmp, "one.json"))...)
		four := measure(agents, append(load, "--agents", addrs(4), "--token-file", token, "-o", filepath.Join(tmp, "four.json"))...)
		fmt.Printf("%-12s %10d %12.2f %14.2f\n", "1 process", one.count, one.cpu, 1e6*one.cpu/float64(one.count))
		fmt.Printf("%-12s %10d %12.2f %14.2f %10v\n", "4 agents", four.count, four.cpu, 1e6*four.cpu/float64(four.count), four.count == one.count)
		skews = append(skews, four.skews...)
	}
	slices.Sort(skews)
	fmt.Printf("\n3. start skew over %d agent starts: median %.2f ms, max %.2f ms\n", len(skews), skews[len(skews)/2], skews[len(skews)-1])
}

type figures struct {
	rate  float64
	count uint64
	cpu   float64 // seconds, every throng process
	bound int
	skews []float64
}

// measure runs throng and reads its result and the CPU of every throng
// process (the command and the agents).
func measure(agents []*exec.Cmd, args ...string) figures {
	before := 0.0
	for _, a := range agents {
		before += procCPU(a.Process.Pid)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	check(cmd.Run())
	after := 0.0
	for _, a := range agents {
		after += procCPU(a.Process.Pid)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	out := args[len(args)-1]
	run, err := result.ReadFile(out)
	check(err)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	f := figures{rate: all.Total.RatePerS, count: all.Total.Count, cpu: own + after - before, bound: all.BoundIntervals}
	for _, a := range run.Agents {
		f.skews = append(f.skews, a.StartSkewMs)
	}
	return f
}

// procCPU is a process's user+system time in seconds, from /proc/PID/stat.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func startAgents(n int) []*exec.Cmd {
	var cmds []*exec.Cmd
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", 17800+i)
		cmd := exec.Command(bin, "agent", "--listen", addr, "--token-file", token, "--dir", filepath.Join(tmp, "agent"+strconv.Itoa(i)))
		stderr, _ := cmd.StderrPipe()
		check(cmd.Start())
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				break
			}
		}
		go func() {
			for sc.Scan() {
			}
		}()
		cmds = append(cmds, cmd)
	}
	return cmds
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		os.Exit(1)
	}
}
