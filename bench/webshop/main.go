// Command webshop measures throng against Locust (FastHttpUser) and
// Artillery running the same journeys: the web-shop preset's (a buyer logs
// in — a form POST, a session cookie, a 303 to the account page, a CSRF
// token from its form —, searches, adds to the cart twice and checks out;
// a browser follows a 301 and reads the catalogue; 3 buyers for 1 browser,
// every check made). locustfile.py and artillery.yml (with shop.js) are
// those journeys for the peers.
//
//	go run ./bench/webshop -rounds 3 -users 50 -duration 10s -think 0s
//
// Targets: the demo shop in its own process (`throng serve web-shop`) and
// the same shop behind nginx (internal/testenv, NginxOptions.Upstream).
// Each round runs every tool once on every target, the tools' order
// turning from round to round. For each run it prints the HTTP requests
// (redirects included: each tool's own count; behind nginx also what
// nginx counted, from stub_status), requests per client CPU-second (the
// CPU of the client's whole process tree, from /proc and rusage), the peak
// resident memory of that tree per user, and p99 of the requests; then
// medians and the ratio throng/peer of requests per CPU-second (each
// throng run against the peer's run of the same round and target).
//
// The peers are found with -locust and -artillery; setup.sh installs them
// under ~/.cache/throng-bench (a Python venv, an npm prefix). A run with
// errors is reported with them; a run whose journeys fail is not a
// comparison, so the journeys' errors are printed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	tool, target string
	round        int
	requests     float64 // HTTP requests, redirects included, as the tool counts them
	server       float64 // as nginx counted them (behind nginx only)
	errors       float64
	seconds      float64
	cpu          float64
	peakRSS      int64
	p99          float64 // ms
	users        int
}

func (s sample) perCPU() float64  { return s.requests / s.cpu }
func (s sample) rps() float64     { return s.requests / s.seconds }
func (s sample) perUser() float64 { return float64(s.peakRSS) / float64(s.users) }

type env struct {
	bin, dir, self string
	users          int
	dur, think     time.Duration
	locust, art    string
}

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	users := flag.Int("users", 50, "users (Locust users, Artillery virtual users)")
	dur := flag.Duration("duration", 10*time.Second, "length of each run")
	think := flag.Duration("think", 0, "pause after each step")
	memUsers := flag.String("mem", "10,500", "memory pass: two user counts (think -memthink, on the shop) whose peak resident sets give the memory each further user costs; empty: none")
	memThink := flag.Duration("memthink", time.Second, "think time of the memory pass")
	toolsFlag := flag.String("tools", "throng,locust,artillery", "clients to measure")
	targetsFlag := flag.String("targets", "shop,nginx", "shop: `throng serve web-shop`; nginx: the same behind nginx")
	home, _ := os.UserHomeDir()
	locust := flag.String("locust", filepath.Join(home, ".cache/throng-bench/venv/bin/locust"), "locust executable")
	art := flag.String("artillery", filepath.Join(home, ".cache/throng-bench/art/node_modules/.bin/artillery"), "artillery executable")
	flag.Parse()

	_, file, _, _ := runtime.Caller(0)
	tmp, err := os.MkdirTemp("", "webshop-")
	check(err)
	defer os.RemoveAll(tmp)
	e := env{bin: filepath.Join(tmp, "throng"), dir: tmp, self: filepath.Dir(file), users: *users, dur: *dur, think: *think, locust: *locust, art: *art}
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	tools := strings.Split(*toolsFlag, ",")
	for _, t := range tools {
		switch t {
		case "throng":
		case "locust":
			_, err := os.Stat(e.locust)
			check(err)
		case "artillery":
			_, err := os.Stat(e.art)
			check(err)
		default:
			check(fmt.Errorf("unknown tool %q", t))
		}
	}

	shop := exec.Command(e.bin, "serve", "web-shop", "--listen", "127.0.0.1:0")
	shop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := shop.StdoutPipe()
	check(err)
	check(shop.Start())
	defer func() {
		shop.Process.Signal(syscall.SIGTERM)
		shop.Wait()
	}()
	line, err := bufio.NewReader(pipe).ReadString('\n')
	check(err)
	f := strings.Fields(line) // serving web-shop at http://127.0.0.1:PORT (under /shop/; ...
	if len(f) < 4 || !strings.HasPrefix(f[3], "http://") {
		check(fmt.Errorf("cannot read the shop's address from %q", line))
	}
	shopURL := f[3]
	go io.Copy(io.Discard, pipe)
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{Workers: 1, KeepaliveRequests: 100_000_000, Upstream: strings.TrimPrefix(shopURL, "http://")})
	check(err)
	defer ng.Stop()
	targets := map[string]string{"shop": shopURL, "nginx": ng.URL}
	var order []string
	for _, t := range strings.Split(*targetsFlag, ",") {
		if targets[t] == "" {
			check(fmt.Errorf("unknown target %q", t))
		}
		order = append(order, t)
	}
	fmt.Printf("web-shop journeys: %d users, %v per run, think %v, %d rounds; shop %s (own process), nginx %s (1 worker) in front of it; %d cores\n\n",
		*users, *dur, *think, *rounds, shopURL, ng.URL, benchkit.Cores())

	var all []sample
	for r := 1; r <= *rounds; r++ {
		for _, tg := range order {
			turned := append(slices.Clone(tools[(r-1)%len(tools):]), tools[:(r-1)%len(tools)]...)
			for _, tool := range turned {
				var s sample
				check(benchkit.Locked("bench/webshop", func() {
					before := nginxRequests(ng.URL, tg)
					switch tool {
					case "throng":
						s = e.runThrong(targets[tg])
					case "locust":
						s = e.runLocust(targets[tg])
					case "artillery":
						s = e.runArtillery(targets[tg])
					}
					if tg == "nginx" {
						s.server = nginxRequests(ng.URL, tg) - before - 1 // less the status request itself
					}
				}))
				s.tool, s.target, s.round, s.users = tool, tg, r, *users
				all = append(all, s)
				srv := ""
				if s.server > 0 {
					srv = fmt.Sprintf(" (nginx saw %.0f)", s.server)
				}
				fmt.Printf("round %d %-5s %-9s %8.0f req%s %6.0f req/s %7.2f CPU-s %7.0f req/CPU-s %7.1f KB/user p99 %7.2f ms errors %.0f\n",
					r, tg, tool, s.requests, srv, s.rps(), s.cpu, s.perCPU(), s.perUser()/1024, s.p99, s.errors)
			}
		}
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tclient\truns\treq/s\treq per client CPU-s\tpeak RSS per user KB\tp99 ms\terrors\t")
	for _, tg := range order {
		for _, tool := range tools {
			g := filter(all, tg, tool)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.1f\t%.2f\t%.0f\t\n", tg, tool, len(g),
				benchkit.MedianOf(g, sample.rps), benchkit.MedianOf(g, sample.perCPU), benchkit.MedianOf(g, sample.perUser)/1024,
				benchkit.MedianOf(g, func(s sample) float64 { return s.p99 }), benchkit.MedianOf(g, func(s sample) float64 { return s.errors }))
		}
	}
	tw.Flush()
	fmt.Println("\nthrong / peer, medians of the per-round ratios:")
	defer func() {
		if *memUsers != "" {
			memoryPass(e, tools, shopURL, *memUsers, *memThink)
		}
	}()
	for _, tg := range order {
		th := filter(all, tg, "throng")
		for _, tool := range tools {
			if tool == "throng" {
				continue
			}
			p := filter(all, tg, tool)
			var cpu, mem, p99 []float64
			for i := range min(len(th), len(p)) {
				cpu = append(cpu, th[i].perCPU()/p[i].perCPU())
				mem = append(mem, p[i].perUser()/th[i].perUser())
				p99 = append(p99, p[i].p99/th[i].p99)
			}
			fmt.Printf("  %-5s vs %-9s req per CPU-s %5.1fx %v   memory per user %5.1fx less   p99 %5.1fx lower\n",
				tg, tool, benchkit.Median(cpu), benchkit.Ratios(cpu, 1), benchkit.Median(mem), benchkit.Median(p99))
		}
	}
}

// memoryPass runs every tool on the shop with two user counts (lo, hi)
// thinking think after each step, in alternating order, and prints the
// memory each user past lo costs: (peak(hi) - peak(lo)) / (hi - lo).
func memoryPass(e env, tools []string, target, counts string, think time.Duration) {
	var lo, hi int
	if _, err := fmt.Sscanf(counts, "%d,%d", &lo, &hi); err != nil || lo < 1 || hi <= lo {
		check(fmt.Errorf("-mem %q: two user counts, the first smaller", counts))
	}
	fmt.Printf("\nmemory: %d and %d users on the shop, think %v, %v each\n", lo, hi, think, e.dur)
	peak := map[string][2]int64{}
	for i, n := range []int{lo, hi} {
		turned := tools
		if i == 1 {
			turned = slices.Clone(tools)
			slices.Reverse(turned)
		}
		for _, tool := range turned {
			m := e
			m.users, m.think = n, think
			var s sample
			check(benchkit.Locked("bench/webshop", func() {
				switch tool {
				case "throng":
					s = m.runThrong(target)
				case "locust":
					s = m.runLocust(target)
				case "artillery":
					s = m.runArtillery(target)
				}
			}))
			p := peak[tool]
			p[i] = s.peakRSS
			peak[tool] = p
			fmt.Printf("  %-9s %4d users: peak RSS %7.1f MB, %6.0f req/s, p99 %7.2f ms, errors %.0f\n", tool, n, float64(s.peakRSS)/(1<<20), s.rps(), s.p99, s.errors)
		}
	}
	per := map[string]float64{}
	for _, tool := range tools {
		p := peak[tool]
		per[tool] = float64(p[1]-p[0]) / float64(hi-lo)
		fmt.Printf("  %-9s memory per further user %7.1f KB\n", tool, per[tool]/1024)
	}
	for _, tool := range tools {
		if tool != "throng" && per["throng"] > 0 {
			fmt.Printf("  throng uses %.1fx less memory per user than %s\n", per[tool]/per["throng"], tool)
		}
	}
}

// runThrong runs the web-shop preset itself.
func (e env) runThrong(target string) sample {
	out := filepath.Join(e.dir, "throng.json")
	// The peers start their users over the first second (Locust's spawn
	// rate of -u users a second, Artillery's arrivalCount in a phase of
	// 1 s): so does throng (the preset's ramp).
	cmd := exec.Command(e.bin, "run", "web-shop", "--target", target, "--users", strconv.Itoa(e.users),
		"--iterations", "0", "--duration", e.dur.String(), "--set", "think="+e.think.String(), "--set", "ramp=1s", "-q", "-o", out)
	cmd.Stderr = os.Stderr
	tr, err := benchkit.RunTree(cmd, 100*time.Millisecond)
	if err != nil && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1 {
		err = nil // a verdict of NOT VALID (client-bound on a shared machine): the figures stand
	}
	check(err)
	run, err := result.ReadFile(out)
	check(err)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	redirects := 0.0
	for _, a := range all.Actions {
		if a.Name == "redirect" {
			redirects = float64(a.Count)
		}
	}
	return sample{requests: float64(all.Total.Count) + redirects, errors: float64(all.Total.Errors), seconds: all.DurationS,
		cpu: tr.CPU(cmd.ProcessState), peakRSS: tr.PeakRSS(cmd.ProcessState), p99: all.Total.Latency.P99Ms}
}

// runLocust runs locustfile.py headless with FastHttpUser. Its figures
// are the final ones Locust prints with --json (its CSV files are written
// every second and miss the last one).
func (e env) runLocust(target string) sample {
	cmd := exec.Command(e.locust, "-f", filepath.Join(e.self, "locustfile.py"), "--headless", "--only-summary", "--json",
		"-u", strconv.Itoa(e.users), "-r", strconv.Itoa(e.users), "-t", fmt.Sprintf("%ds", int(e.dur.Seconds())),
		"--host", target, "--loglevel", "WARNING", "--exit-code-on-error", "0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("THINK=%g", e.think.Seconds()))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	tr, err := benchkit.RunTree(cmd, 100*time.Millisecond)
	if err != nil {
		check(fmt.Errorf("locust: %v\n%s", err, tail(stderr.String())))
	}
	var stats []struct {
		Name          string         `json:"name"`
		Requests      float64        `json:"num_requests"`
		Failures      float64        `json:"num_failures"`
		ResponseTimes map[string]int `json:"response_times"` // rounded ms: count
	}
	check(json.Unmarshal([]byte(stdout.String()), &stats))
	s := sample{seconds: e.dur.Seconds(), cpu: tr.CPU(cmd.ProcessState), peakRSS: tr.PeakRSS(cmd.ProcessState)}
	times := map[float64]int{}
	for _, r := range stats {
		s.requests += r.Requests
		s.errors += r.Failures
		if r.Name == "login" || r.Name == "browse-home" {
			s.requests += r.Requests // FastHttpUser follows their redirect inside the request it counts
		}
		for k, n := range r.ResponseTimes {
			v, _ := strconv.ParseFloat(k, 64)
			times[v] += n
		}
	}
	s.p99 = quantile(times, 0.99)
	if s.errors > 0 {
		fmt.Fprintf(os.Stderr, "locust failures:\n%s", tail(stderr.String()))
	}
	return s
}

// quantile is the q-quantile of a histogram of values.
func quantile(h map[float64]int, q float64) float64 {
	var vs []float64
	total := 0
	for v, n := range h {
		vs = append(vs, v)
		total += n
	}
	slices.Sort(vs)
	seen := 0
	for _, v := range vs {
		seen += h[v]
		if float64(seen) >= q*float64(total) {
			return v
		}
	}
	return 0
}

// runArtillery runs artillery.yml.
func (e env) runArtillery(target string) sample {
	out := filepath.Join(e.dir, "artillery.json")
	// Artillery takes no template in think: the bench writes the number in
	// a copy of artillery.yml, next to a copy of shop.js.
	yml, err := os.ReadFile(filepath.Join(e.self, "artillery.yml"))
	check(err)
	yml = []byte(strings.ReplaceAll(string(yml), `"{{ $processEnvironment.THINK }}"`, strconv.FormatFloat(e.think.Seconds(), 'g', -1, 64)))
	js, err := os.ReadFile(filepath.Join(e.self, "shop.js"))
	check(err)
	check(os.WriteFile(filepath.Join(e.dir, "artillery.yml"), yml, 0o644))
	check(os.WriteFile(filepath.Join(e.dir, "shop.js"), js, 0o644))
	cmd := exec.Command(e.art, "run", "--output", out, filepath.Join(e.dir, "artillery.yml"))
	cmd.Env = append(os.Environ(), "TARGET="+target, fmt.Sprintf("USERS=%d", e.users),
		fmt.Sprintf("DURATION=%g", e.dur.Seconds()),
		"ARTILLERY_DISABLE_TELEMETRY=true", "ARTILLERY_TELEMETRY_DEFAULTS={}", "DO_NOT_TRACK=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Stdout = io.Discard
	tr, err := benchkit.RunTree(cmd, 100*time.Millisecond)
	if err != nil {
		check(fmt.Errorf("artillery: %v\n%s", err, tail(stderr.String())))
	}
	var rep struct {
		Aggregate struct {
			Counters      map[string]float64               `json:"counters"`
			Summaries     map[string]struct{ P99 float64 } `json:"summaries"`
			FirstMetricAt int64                            `json:"firstMetricAt"`
			LastMetricAt  int64                            `json:"lastMetricAt"`
		} `json:"aggregate"`
	}
	b, err := os.ReadFile(out)
	check(err)
	check(json.Unmarshal(b, &rep))
	a := rep.Aggregate
	// A user checks the deadline between rounds of four journeys only
	// (Artillery's loops), so it may go on past it: the load's own length
	// is from its first metric to its last.
	secs := e.dur.Seconds()
	if a.LastMetricAt > a.FirstMetricAt {
		secs = float64(a.LastMetricAt-a.FirstMetricAt) / 1000
	}
	s := sample{requests: a.Counters["http.requests"], seconds: secs, cpu: tr.CPU(cmd.ProcessState),
		peakRSS: tr.PeakRSS(cmd.ProcessState), p99: a.Summaries["http.response_time"].P99}
	for k, v := range a.Counters {
		if strings.HasPrefix(k, "errors.") || k == "vusers.failed" {
			s.errors += v
		}
	}
	if s.errors > 0 {
		var errs []string
		for k, v := range a.Counters {
			if strings.HasPrefix(k, "errors.") {
				errs = append(errs, fmt.Sprintf("%s=%.0f", k, v))
			}
		}
		fmt.Fprintf(os.Stderr, "artillery errors: %s\n", strings.Join(errs, " "))
	}
	return s
}

// nginxRequests is the requests nginx served (stub_status); 0 for the
// shop alone.
func nginxRequests(url, target string) float64 {
	if target != "nginx" {
		return 0
	}
	n, err := testenv.NginxRequests(url)
	check(err)
	return float64(n)
}

func tail(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-15):], "\n") + "\n"
}

func filter(all []sample, target, tool string) []sample {
	var g []sample
	for _, s := range all {
		if s.target == target && s.tool == tool {
			g = append(g, s)
		}
	}
	return g
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "webshop:", err)
		os.Exit(1)
	}
}
