// Command truth runs throng against web servers whose every answer's delay
// is known (internal/targets/webtruth) and prints, phase by phase, the true
// p50, p95 and p99 of the requests that arrived in the phase (what the
// server recorded it held each one) beside throng's. It fails (exit 1) when
// a figure is more than -tolerance off, or a phase's count is not the
// number of requests that arrived in it (±1 at each boundary).
//
//	go run ./bench/truth                       # every case, 60 s of steady state each
//	go run ./bench/truth -case stall -steady 2m
//
// Cases (the steady state's length is -steady; ramps are a sixth of it):
//
//	stall      issue 19's: 200 arrivals/s (Poisson), answers of about 50 ms
//	           (lognormal), a 1 s stall every 10 s, the last one ending with the
//	           steady state (true p95 ≈ 550 ms): the stalled requests of the
//	           steady state are the steady state's, however late they finish.
//	lognormal  300 arrivals/s over a ramp-up, a steady state and a ramp-down,
//	           answers lognormal (median 40 ms, σ 0.6).
//	uniform    400 arrivals/s (uniform), answers uniform from 30 to 70 ms, a
//	           300 ms stall every 5 s.
//
// The truth is the server's hold; throng's latency adds the request's and
// the answer's way through the loopback and both processes' scheduling
// (tenths of a millisecond on a quiet machine), which is why the answers
// last tens of milliseconds. Run it on a quiet machine: a loaded one delays
// the generator, and the validity verdict printed says so.
//
// throng runs in this process as `throng run` does (internal/cli), the
// server in this process too; the generator's validity verdict is printed
// with each case (a client-bound run measures the machine, not the server).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/cli"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/targets/webtruth"
)

// tcase is one truth case.
type tcase struct {
	name, about string
	users       int
	rate        string // open.rate
	arrivals    string // poisson or uniform
	ramps       bool
	server      webtruth.Config
	// stallEnd: anchor the stalls so that one ends with the steady state.
	stallEnd bool
}

func cases() []tcase {
	ms := time.Millisecond
	return []tcase{
		{name: "stall", about: "200/s Poisson, ~50 ms answers, a 1 s stall every 10 s ending with the steady state",
			users: 400, rate: "200/s", arrivals: "poisson", ramps: false, stallEnd: true,
			server: webtruth.Config{Delay: webtruth.Dist{Kind: "lognormal", Value: 50 * ms, Sigma: 0.3}, Seed: 19,
				StallEvery: 10 * time.Second, StallFor: time.Second, StallAt: 9 * time.Second}},
		{name: "lognormal", about: "300/s Poisson over ramps, lognormal answers (median 40 ms, σ 0.6)",
			users: 200, rate: "300/s", arrivals: "poisson", ramps: true,
			server: webtruth.Config{Delay: webtruth.Dist{Kind: "lognormal", Value: 40 * ms, Sigma: 0.6}, Seed: 20}},
		{name: "uniform", about: "400/s uniform, answers 30-70 ms, a 300 ms stall every 5 s",
			users: 300, rate: "400/s", arrivals: "uniform", ramps: true,
			server: webtruth.Config{Delay: webtruth.Dist{Kind: "uniform", Min: 30 * ms, Max: 70 * ms}, Seed: 21,
				StallEvery: 5 * time.Second, StallFor: 300 * ms, StallAt: 2 * time.Second}},
	}
}

func main() {
	only := flag.String("case", "", "run only this case (stall, lognormal, uniform)")
	steady := flag.Duration("steady", time.Minute, "length of each case's steady state")
	tolerance := flag.Float64("tolerance", 0.02, "largest relative error allowed on p50, p95, p99")
	flag.Parse()
	dir, err := os.MkdirTemp("", "truth-")
	check(err)
	defer os.RemoveAll(dir)
	failed := false
	ran := 0
	for _, c := range cases() {
		if *only != "" && c.name != *only {
			continue
		}
		ran++
		ok, err := runCase(c, *steady, *tolerance, dir)
		check(err)
		failed = failed || !ok
	}
	if ran == 0 {
		fmt.Fprintf(os.Stderr, "truth: no case %q\n", *only)
		os.Exit(2)
	}
	if failed {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("ok: every figure within the tolerance of the truth")
}

func runCase(c tcase, steady time.Duration, tolerance float64, dir string) (bool, error) {
	ramp := time.Duration(0)
	if c.ramps {
		ramp = steady / 6
	}
	start := time.Now().Add(500 * time.Millisecond).Truncate(time.Millisecond)
	cfg := c.server
	cfg.Anchor = start
	if c.stallEnd {
		// The stalls' periods end where the steady state ends.
		cfg.Anchor = start.Add(ramp + steady).Add(-steady / cfg.StallEvery * cfg.StallEvery)
	}
	srv, err := webtruth.Start("127.0.0.1:0", cfg)
	if err != nil {
		return false, err
	}
	defer srv.Close()
	phases := fmt.Sprintf("{steady: %s}", steady)
	if c.ramps {
		phases = fmt.Sprintf("{ramp_up: {duration: %s}, steady: %s, ramp_down: %s}", ramp, steady, ramp)
	}
	file := filepath.Join(dir, c.name+".yaml")
	err = os.WriteFile(file, []byte(fmt.Sprintf(`name: truth-%s
users: %d
model: open
open: {rate: %s, arrivals: %s, max_delay: 10s}
interval: 1s
phases: %s
web: {timeout: 10s}
actions: [{path: /}]
`, c.name, c.users, c.rate, c.arrivals, phases)), 0o644)
	if err != nil {
		return false, err
	}
	out := filepath.Join(dir, c.name+".json")
	fmt.Printf("\n== %s: %s; %s of steady state\n", c.name, c.about, steady)
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"run", file, "--target", srv.URL(), "--start-at", start.UTC().Format(time.RFC3339Nano), "-q", "-o", out}, &stdout, &stderr)
	run, err := result.ReadFile(out)
	if err != nil {
		return false, fmt.Errorf("%s: exit %d: %v\n%s%s", c.name, code, err, stdout.String(), stderr.String())
	}
	pts, err := webtruth.Check(run, srv)
	if err != nil {
		return false, err
	}
	fmt.Print(webtruth.Table(pts))
	ok := true
	for _, p := range pts {
		if p.MaxRelativeError > tolerance {
			fmt.Printf("  %s: off by %.2f%%, more than %.0f%%\n", p.Phase, 100*p.MaxRelativeError, 100*tolerance)
			ok = false
		}
		if d := int(p.Count) - p.Requests; d < -1 || d > 1 {
			fmt.Printf("  %s: %d counted, %d arrived\n", p.Phase, p.Count, p.Requests)
			ok = false
		}
	}
	if v := result.ValidityOf(&run.Meta, &run.Repetitions[0]); v != nil {
		var checks []string
		for _, ch := range v.Checks {
			checks = append(checks, ch.Name+" "+ch.Status)
		}
		fmt.Printf("  validity: valid %v (%s)\n", v.Valid, strings.Join(checks, ", "))
		for _, ch := range v.Checks {
			if ch.Status == result.Fail {
				fmt.Printf("    %s: %s\n", ch.Name, ch.Message)
			}
		}
	}
	return ok, nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "truth:", err)
		os.Exit(1)
	}
}
