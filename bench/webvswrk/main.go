// Command webvswrk measures throng against wrk on the same nginx 1-byte page
// (the IIS study's workload, docs/studies.md): same connection count, alternating runs, several
// rounds, and prints for both requests/s, requests per client CPU-second,
// p50/p99, and the median ratio throng/wrk. nginx runs one worker with
// keepalive_requests high; on a 2-core machine its worker saturates, so
// requests per client CPU-second is the figure that tells generators apart.
//
//	go run ./bench/webvswrk -rounds 3 -conns 10,50 -duration 10s -engines io_uring,epoll
//
// It starts its own nginx (internal/testenv) and builds throng from this
// tree. Client CPU is the child's user+system time from rusage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

type sample struct {
	tool     string
	conns    int
	round    int
	requests float64
	seconds  float64
	cpu      float64 // user+system seconds of the client process
	p50, p99 float64 // ms
}

func (s sample) rps() float64    { return s.requests / s.seconds }
func (s sample) perCPU() float64 { return s.requests / s.cpu }
func (s sample) String() string  { return fmt.Sprintf("%s c=%d", s.tool, s.conns) }
func cpuOf(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	connsFlag := flag.String("conns", "10,50", "connection counts")
	dur := flag.Duration("duration", 10*time.Second, "length of each run")
	enginesFlag := flag.String("engines", "io_uring,epoll", "throng engines to measure")
	threads := flag.Int("threads", 1, "throng event-loop threads (wrk runs -t with the same number)")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "webvswrk-")
	check(err)
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	wrk, err := exec.LookPath("wrk")
	check(err)

	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{Workers: 1, KeepaliveRequests: 100_000_000})
	check(err)
	defer ng.Stop()
	fmt.Printf("nginx %s (1 worker), %d rounds x %v, conns %s, throng engines %s, threads %d\n\n",
		ng.URL, *rounds, *dur, *connsFlag, *enginesFlag, *threads)

	var conns []int
	for _, c := range strings.Split(*connsFlag, ",") {
		n, err := strconv.Atoi(c)
		check(err)
		conns = append(conns, n)
	}
	engines := strings.Split(*enginesFlag, ",")
	var all []sample
	ratios := map[string][]float64{}
	for r := 1; r <= *rounds; r++ {
		for _, c := range conns {
			for _, eng := range engines {
				// Each throng run is compared with the wrk run just before it.
				w := runWrk(wrk, ng.URL, c, *threads, *dur)
				w.round = r
				t := runThrong(bin, tmp, ng.URL, eng, c, *threads, *dur)
				t.round = r
				all = append(all, w, t)
				key := fmt.Sprintf("%s c=%d", eng, c)
				ratios[key] = append(ratios[key], t.perCPU()/w.perCPU())
				fmt.Printf("round %d c=%-3d wrk %8.0f req/s %8.0f req/CPU-s | throng %-8s %8.0f req/s %8.0f req/CPU-s | ratio %.2f\n",
					r, c, w.rps(), w.perCPU(), eng, t.rps(), t.perCPU(), t.perCPU()/w.perCPU())
			}
		}
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tconns\truns\treq/s (median)\treq per client CPU-s (median)\tp50 ms\tp99 ms\t")
	groups := map[string][]sample{}
	var order []string
	for _, s := range all {
		k := s.String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	for _, k := range order {
		g := groups[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t\n", g[0].tool, g[0].conns, len(g),
			benchkit.MedianOf(g, sample.rps), benchkit.MedianOf(g, sample.perCPU),
			benchkit.MedianOf(g, func(s sample) float64 { return s.p50 }), benchkit.MedianOf(g, func(s sample) float64 { return s.p99 }))
	}
	tw.Flush()
	fmt.Println("\nthrong / wrk, requests per client CPU-second (each throng run against the wrk run just before it):")
	keys := make([]string, 0, len(ratios))
	for k := range ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := ratios[k]
		fmt.Printf("  %-16s median %.2fx  [min %.2f, max %.2f]  %v\n", k, benchkit.Median(v), slices.Min(v), slices.Max(v), benchkit.Ratios(v, 2))
	}
}

var (
	wrkTotal = regexp.MustCompile(`(\d+) requests in ([\d.]+)(s|ms|m)`)
	wrkLat   = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)`)
)

func runWrk(wrk, url string, conns, threads int, d time.Duration) sample {
	cmd := exec.Command(wrk, "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s", "--latency", url+"/one.html")
	out, err := cmd.Output()
	check(err)
	m := wrkTotal.FindStringSubmatch(string(out))
	if m == nil {
		check(fmt.Errorf("cannot read wrk's output:\n%s", out))
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	switch m[3] {
	case "ms":
		secs /= 1000
	case "m":
		secs *= 60
	}
	s := sample{tool: "wrk", conns: conns, requests: n, seconds: secs, cpu: cpuOf(cmd.ProcessState)}
	for _, l := range wrkLat.FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseFloat(l[2], 64)
		switch l[3] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		if l[1] == "50" {
			s.p50 = v
		} else {
			s.p99 = v
		}
	}
	return s
}

func runThrong(bin, tmp, url, eng string, conns, threads int, d time.Duration) sample {
	out := filepath.Join(tmp, fmt.Sprintf("throng-%s-%d.json", eng, conns))
	cmd := exec.Command(bin, "run", "web-static", "--target", url, "--users", strconv.Itoa(conns),
		"--iterations", "0", "--duration", d.String(), "--engine", eng, "--threads", strconv.Itoa(threads), "-q", "-o", out)
	cmd.Stderr = os.Stderr
	check(cmd.Run())
	run, err := result.ReadFile(out)
	check(err)
	s := result.Find(run.Repetitions[0].Summaries, "steady")
	if s == nil {
		s = result.Find(run.Repetitions[0].Summaries, result.All)
	}
	if s.Total.Errors > 0 {
		check(fmt.Errorf("throng %s saw %d errors: %v", eng, s.Total.Errors, s.Total.Messages))
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	return sample{tool: "throng " + eng, conns: conns, requests: float64(all.Total.Count), seconds: all.DurationS,
		cpu: cpuOf(cmd.ProcessState), p50: all.Total.Latency.P50Ms, p99: all.Total.Latency.P99Ms}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "webvswrk:", err)
		os.Exit(1)
	}
}
