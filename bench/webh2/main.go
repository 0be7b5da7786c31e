// Command webh2 measures throng's HTTP/2 static storm against h2load
// (nghttp2-client) on the same nginx page over HTTP/2: the 1-byte
// /one.html of bench/webvswrk, on nginx's h2c listener (HTTP/2 without TLS,
// prior knowledge) or its h2 one (TLS, ALPN). h2load runs -t1 -c C -m M
// (one thread, C clients with M streams each); throng runs C*M users, M to
// a connection (web.streams), each with one request in flight, on one
// event-loop thread (--threads 1) of each engine asked for, so both keep
// C*M requests in flight on C connections. Alternating runs, the order
// turning every round; it prints requests/s, requests per client
// CPU-second (the client's process tree, /proc and rusage), p50/p99, and
// the median ratios throng/h2load of requests per CPU-second and of p99.
//
//	go run ./bench/webh2 -rounds 3 -shapes 1x10,4x25,10x10 -duration 10s -protocol h2c
//
// h2load's p99 comes from a run of its own with --log-file (a line per
// request), whose CPU is not counted: the log would cost h2load CPU the
// measured run does not pay. With -protocol h2 (TLS) throng runs HTTP/2 on
// net/http (the goroutine executor): the event loops do not speak TLS.
//
// One stream per connection (10x1) is left out of the default shapes: nginx
// 1.22 answers it about every 40 ms whichever the client (h2load the same),
// a delayed ACK meeting a response written in two parts, so it measures
// the wait, not the client.
//
// It starts its own nginx (internal/testenv, HTTP2 on) and builds throng
// from this tree.
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
	"text/tabwriter"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

type shape struct{ conns, streams int }

func (s shape) String() string { return fmt.Sprintf("%dx%d", s.conns, s.streams) }

type sample struct {
	tool     string // h2load, or throng's engine
	engine   string // what throng's result says ran
	shape    shape
	requests float64
	seconds  float64
	cpu      float64
	p50, p99 float64
	log      string // h2load's per-request log, if any
}

func (s sample) rps() float64    { return s.requests / s.seconds }
func (s sample) perCPU() float64 { return s.requests / s.cpu }

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	shapesFlag := flag.String("shapes", "1x10,4x25,10x10", "connections x streams per connection")
	dur := flag.Duration("duration", 10*time.Second, "length of each run")
	proto := flag.String("protocol", "h2c", "h2c (no TLS) or h2 (TLS, ALPN)")
	enginesFlag := flag.String("engines", "io_uring,epoll", "throng's engines, each run every round (auto, io_uring, epoll, goroutines)")
	threads := flag.Int("threads", 1, "throng's event-loop threads (h2load runs one: -t1)")
	latency := flag.Bool("h2load-p99", true, "an extra h2load run per round and shape with --log-file, for its p99 (CPU not counted)")
	flag.Parse()
	engines := strings.Split(*enginesFlag, ",")
	if *proto != "h2c" && *proto != "h2" {
		check(fmt.Errorf("-protocol %q: h2c or h2", *proto))
	}
	var shapes []shape
	for _, f := range strings.Split(*shapesFlag, ",") {
		var s shape
		if _, err := fmt.Sscanf(f, "%dx%d", &s.conns, &s.streams); err != nil || s.conns < 1 || s.streams < 1 {
			check(fmt.Errorf("-shapes: %q is not CxM", f))
		}
		shapes = append(shapes, s)
	}

	tmp, err := os.MkdirTemp("", "webh2-")
	check(err)
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	h2load, err := exec.LookPath("h2load")
	check(err)
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{Workers: 1, KeepaliveRequests: 100_000_000, HTTP2: true})
	check(err)
	defer ng.Stop()
	url := ng.H2CURL
	if *proto == "h2" {
		url = ng.TLSURL
	}
	fmt.Printf("nginx %s (%s, 1 worker), %d rounds x %v, shapes %s (connections x streams)\n\n", url, *proto, *rounds, *dur, *shapesFlag)

	var all []sample
	ratios := map[string][]float64{}    // "shape engine": requests per CPU-s, throng / h2load
	p99ratios := map[string][]float64{} // p99, throng / h2load
	tools := append([]string{"h2load"}, engines...)
	for r := 1; r <= *rounds; r++ {
		for _, sh := range shapes {
			got := map[string]sample{}
			// The order turns every round: no tool always runs first.
			for i := range tools {
				tool := tools[(i+r-1)%len(tools)]
				check(benchkit.Locked("bench/webh2 "+tool, func() {
					if tool == "h2load" {
						got[tool] = runH2load(h2load, url, sh, *dur, "")
					} else {
						got[tool] = runThrong(bin, tmp, url, *proto, tool, *threads, sh, *dur)
					}
				}))
			}
			h := got["h2load"]
			if *latency {
				check(benchkit.Locked("bench/webh2 h2load-log", func() {
					h.p50, h.p99 = runH2load(h2load, url, sh, *dur, filepath.Join(tmp, "h2load.log")).quantiles()
				}))
			}
			all = append(all, h)
			fmt.Printf("round %d %-6s h2load %8.0f req/s %8.0f req/CPU-s p99 %6.2f ms", r, sh, h.rps(), h.perCPU(), h.p99)
			for _, e := range engines {
				t := got[e]
				all = append(all, t)
				key := sh.String() + " " + e
				ratios[key] = append(ratios[key], t.perCPU()/h.perCPU())
				if h.p99 > 0 {
					p99ratios[key] = append(p99ratios[key], t.p99/h.p99)
				}
				fmt.Printf(" | %s %8.0f req/s %8.0f req/CPU-s p99 %6.2f ms ratio %.2f", t.engine, t.rps(), t.perCPU(), t.p99, t.perCPU()/h.perCPU())
			}
			fmt.Println()
		}
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tshape\truns\treq/s (median)\treq per client CPU-s (median)\tp50 ms\tp99 ms\t")
	for _, sh := range shapes {
		for _, tool := range tools {
			var g []sample
			for _, s := range all {
				if s.tool == tool && s.shape == sh {
					g = append(g, s)
				}
			}
			name := tool
			if tool != "h2load" && len(g) > 0 {
				name = "throng " + g[0].engine
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t\n", name, sh, len(g), benchkit.MedianOf(g, sample.rps), benchkit.MedianOf(g, sample.perCPU),
				benchkit.MedianOf(g, func(s sample) float64 { return s.p50 }), benchkit.MedianOf(g, func(s sample) float64 { return s.p99 }))
		}
	}
	tw.Flush()
	fmt.Println("\nthrong / h2load, paired by round: requests per client CPU-second; p99 (lower is better for throng below 1)")
	for _, sh := range shapes {
		for _, e := range engines {
			key := sh.String() + " " + e
			v, p := ratios[key], p99ratios[key]
			fmt.Printf("  %-6s %-10s req/CPU-s median %.2fx [min %.2f, max %.2f]", sh, e, benchkit.Median(v), slices.Min(v), slices.Max(v))
			if len(p) > 0 {
				fmt.Printf("   p99 median %.2fx [min %.2f, max %.2f]", benchkit.Median(p), slices.Min(p), slices.Max(p))
			}
			fmt.Println()
		}
	}
}

var h2Done = regexp.MustCompile(`requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored`)
var h2Time = regexp.MustCompile(`finished in ([\d.]+)(s|ms)`)

// runH2load runs h2load for d; with logFile, it also writes a line per
// request there (sample.quantiles reads it).
func runH2load(bin, url string, sh shape, d time.Duration, logFile string) sample {
	args := []string{"-t1", "-c" + strconv.Itoa(sh.conns), "-m" + strconv.Itoa(sh.streams), "-D", strconv.Itoa(int(d.Seconds()))}
	if logFile != "" {
		args = append(args, "--log-file="+logFile)
	}
	cmd := exec.Command(bin, append(args, url+"/one.html")...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	tr, err := benchkit.RunTree(cmd, 200*time.Millisecond)
	check(err)
	m := h2Done.FindStringSubmatch(out.String())
	tm := h2Time.FindStringSubmatch(out.String())
	if m == nil || tm == nil {
		check(fmt.Errorf("cannot read h2load's output:\n%s", out.String()))
	}
	if m[4] != "0" || m[5] != "0" {
		check(fmt.Errorf("h2load: %s failed, %s errored:\n%s", m[4], m[5], out.String()))
	}
	ok, _ := strconv.ParseFloat(m[3], 64)
	secs, _ := strconv.ParseFloat(tm[1], 64)
	if tm[2] == "ms" {
		secs /= 1000
	}
	if !strings.Contains(out.String(), "Application protocol: h2") {
		check(fmt.Errorf("h2load did not speak h2:\n%s", out.String()))
	}
	return sample{tool: "h2load", engine: "h2load", shape: sh, requests: ok, seconds: secs, cpu: tr.CPU(cmd.ProcessState), log: logFile}
}

// quantiles returns the p50 and p99 of the request times in an h2load log
// (third column, microseconds), in milliseconds.
func (s sample) quantiles() (p50, p99 float64) {
	b, err := os.ReadFile(s.log)
	check(err)
	var us []float64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		check(err)
		us = append(us, v)
	}
	if len(us) == 0 {
		check(fmt.Errorf("h2load's log %s has no request", s.log))
	}
	slices.Sort(us)
	at := func(q float64) float64 { return us[min(len(us)-1, int(q*float64(len(us))))] / 1000 }
	return at(0.50), at(0.99)
}

// scenario is the static storm over HTTP/2: the one page, no think time.
const scenario = `name: h2-static
users: %d
model: closed
closed:
  iterations: 0
web:
  keepalive: true
  timeout: 10s
  protocol: %s
  streams: %d
  insecure_skip_verify: true
actions:
  - name: page
    method: GET
    path: /one.html
`

func runThrong(bin, tmp, url, proto, engine string, threads int, sh shape, d time.Duration) sample {
	file := filepath.Join(tmp, "h2-static.yaml")
	check(os.WriteFile(file, []byte(fmt.Sprintf(scenario, sh.conns*sh.streams, proto, sh.streams)), 0o644))
	out := filepath.Join(tmp, "throng.json")
	cmd := exec.Command(bin, "run", file, "--target", url, "--duration", d.String(), "--engine", engine, "--threads", strconv.Itoa(threads), "-q", "-o", out)
	cmd.Stderr = os.Stderr
	tr, err := benchkit.RunTree(cmd, 200*time.Millisecond)
	if err != nil && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1 {
		err = nil // NOT VALID (client-bound on a shared machine): the figures stand
	}
	check(err)
	run, err := result.ReadFile(out)
	check(err)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if all.Total.Errors > 0 {
		check(fmt.Errorf("throng saw %d errors: %v", all.Total.Errors, all.Total.Messages))
	}
	if p := run.Meta.Settings["protocol"]; !strings.HasPrefix(p, "h2") {
		check(fmt.Errorf("throng ran protocol %q, not HTTP/2", p))
	}
	return sample{tool: engine, engine: run.Meta.Engine, shape: sh, requests: float64(all.Total.Count), seconds: all.DurationS,
		cpu: tr.CPU(cmd.ProcessState), p50: all.Total.Latency.P50Ms, p99: all.Total.Latency.P99Ms}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "webh2:", err)
		os.Exit(1)
	}
}
