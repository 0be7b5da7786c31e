// Command webh2 measures throng's HTTP/2 static storm against h2load
// (nghttp2-client) on the same nginx page over HTTP/2: the 1-byte
// /one.html of bench/webvswrk, on nginx's h2c listener (HTTP/2 without TLS,
// prior knowledge) or its h2 one (TLS, ALPN). h2load runs -c C clients with
// -m M streams each; throng runs C*M users, M to a connection (web.streams),
// each with one request in flight, so both keep C*M requests in flight on
// C connections. Alternating runs, several rounds; it prints requests/s,
// requests per client CPU-second (the client's process tree, /proc and
// rusage), p50/p99 (throng's; h2load gives no percentiles of requests) and
// the median ratio throng/h2load of requests per CPU-second.
//
//	go run ./bench/webh2 -rounds 3 -shapes 1x10,4x25,10x10 -duration 10s -protocol h2c
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
	tool     string
	shape    shape
	requests float64
	seconds  float64
	cpu      float64
	p50, p99 float64
}

func (s sample) rps() float64    { return s.requests / s.seconds }
func (s sample) perCPU() float64 { return s.requests / s.cpu }

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	shapesFlag := flag.String("shapes", "1x10,4x25,10x10", "connections x streams per connection")
	dur := flag.Duration("duration", 10*time.Second, "length of each run")
	proto := flag.String("protocol", "h2c", "h2c (no TLS) or h2 (TLS, ALPN)")
	flag.Parse()
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
	ratios := map[shape][]float64{}
	for r := 1; r <= *rounds; r++ {
		for _, sh := range shapes {
			var h, t sample
			run := func(name string, f func()) { check(benchkit.Locked("bench/webh2 "+name, f)) }
			// The order turns every round: neither tool always runs first.
			first, second := func() { h = runH2load(h2load, url, sh, *dur) }, func() { t = runThrong(bin, tmp, url, *proto, ng.CAFile, sh, *dur) }
			if r%2 == 0 {
				first, second = second, first
			}
			run("a", first)
			run("b", second)
			all = append(all, h, t)
			ratios[sh] = append(ratios[sh], t.perCPU()/h.perCPU())
			fmt.Printf("round %d %-6s h2load %8.0f req/s %8.0f req/CPU-s | throng %8.0f req/s %8.0f req/CPU-s p99 %.2f ms | ratio %.2f\n",
				r, sh, h.rps(), h.perCPU(), t.rps(), t.perCPU(), t.p99, t.perCPU()/h.perCPU())
		}
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tshape\truns\treq/s (median)\treq per client CPU-s (median)\tp50 ms\tp99 ms\t")
	for _, sh := range shapes {
		for _, tool := range []string{"h2load", "throng"} {
			var g []sample
			for _, s := range all {
				if s.tool == tool && s.shape == sh {
					g = append(g, s)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t\n", tool, sh, len(g), benchkit.MedianOf(g, sample.rps), benchkit.MedianOf(g, sample.perCPU),
				benchkit.MedianOf(g, func(s sample) float64 { return s.p50 }), benchkit.MedianOf(g, func(s sample) float64 { return s.p99 }))
		}
	}
	tw.Flush()
	fmt.Println("\nthrong / h2load, requests per client CPU-second (paired by round):")
	for _, sh := range shapes {
		v := ratios[sh]
		fmt.Printf("  %-6s median %.2fx  [min %.2f, max %.2f]\n", sh, benchkit.Median(v), slices.Min(v), slices.Max(v))
	}
}

var h2Done = regexp.MustCompile(`requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored`)
var h2Time = regexp.MustCompile(`finished in ([\d.]+)(s|ms)`)

func runH2load(bin, url string, sh shape, d time.Duration) sample {
	cmd := exec.Command(bin, "-t1", "-c"+strconv.Itoa(sh.conns), "-m"+strconv.Itoa(sh.streams), "-D", strconv.Itoa(int(d.Seconds())), url+"/one.html")
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
	return sample{tool: "h2load", shape: sh, requests: ok, seconds: secs, cpu: tr.CPU(cmd.ProcessState)}
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

func runThrong(bin, tmp, url, proto, ca string, sh shape, d time.Duration) sample {
	file := filepath.Join(tmp, "h2-static.yaml")
	check(os.WriteFile(file, []byte(fmt.Sprintf(scenario, sh.conns*sh.streams, proto, sh.streams)), 0o644))
	out := filepath.Join(tmp, "throng.json")
	cmd := exec.Command(bin, "run", file, "--target", url, "--duration", d.String(), "-q", "-o", out)
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
	return sample{tool: "throng", shape: sh, requests: float64(all.Total.Count), seconds: all.DurationS,
		cpu: tr.CPU(cmd.ProcessState), p50: all.Total.Latency.P50Ms, p99: all.Total.Latency.P99Ms}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "webh2:", err)
		os.Exit(1)
	}
}
