// Command outputs measures what the live outputs cost a run: the
// web-static preset against the embedded server, run alternately without
// any output and with all of them at once — a --prometheus page scraped
// every second by a real Prometheus, --output csv=FILE, --output
// prometheus-rw=URL into that Prometheus, and --output otlp=URL into an
// in-process OTLP/HTTP receiver — and prints each run's actions/s, the
// medians and their ratio.
//
//	go run ./bench/outputs [-rounds 5] [-duration 10s] [-users 10] [-interval 1s] [-receivers prometheus|discard]
//
// With -receivers discard no Prometheus runs: the page is scraped every
// second by this process and remote writes go to an in-process receiver
// that discards them, so that the figures show throng's own cost without a
// Prometheus server sharing the cores.
//
// The runs are in this process (cli.Main), one at a time, under the
// benchmarks' lock (benchkit.Locked). Prometheus comes from Debian's
// prometheus package through internal/testenv. Every output must deliver
// every interval, or the program says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/cli"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds; each runs once without and once with the outputs, alternating which goes first")
	duration := flag.String("duration", "10s", "steady state of each run")
	users := flag.String("users", "10", "users of each run")
	interval := flag.String("interval", "1s", "recording interval (how often outputs get an interval)")
	only := flag.String("outputs", "prometheus,csv,rw,otlp", "the outputs of the runs with outputs, comma-separated: prometheus, csv, rw, otlp")
	receivers := flag.String("receivers", "prometheus", `"prometheus": a real Prometheus scrapes and takes remote writes; "discard": in-process receivers that discard`)
	flag.Parse()
	if *receivers != "prometheus" && *receivers != "discard" {
		fmt.Fprintln(os.Stderr, "outputs: -receivers prometheus or discard")
		os.Exit(2)
	}
	if err := run(*rounds, *duration, *users, *interval, *receivers == "prometheus", strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "outputs:", err)
		os.Exit(1)
	}
}

func run(rounds int, duration, users, interval string, withProm bool, only []string) error {
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	discard := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer discard.Close()
	otlp := discard
	writeURL := discard.URL + "/api/v1/write"
	if withProm {
		prom, err := testenv.StartPrometheus(context.Background(), testenv.PrometheusOptions{Targets: []string{addr}, RemoteWrite: true, NativeHistograms: true})
		if err != nil {
			return err
		}
		defer prom.Stop()
		if err := prom.WaitScraping(context.Background(), 1); err != nil {
			return err
		}
		writeURL = prom.WriteURL
	} else {
		stop := make(chan struct{})
		defer close(stop)
		go func() { // the scraper: every second, like Prometheus
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		}()
	}
	dir, err := os.MkdirTemp("", "throng-bench-outputs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := []string{"run", "web-static", "--iterations", "0", "--duration", duration, "--users", users, "--interval", interval, "-q"}
	var outputs []string
	for _, o := range only {
		switch o {
		case "prometheus":
			outputs = append(outputs, "--prometheus", addr)
		case "csv":
			outputs = append(outputs, "--output", "csv="+filepath.Join(dir, "o.csv"))
		case "rw":
			outputs = append(outputs, "--output", "prometheus-rw="+writeURL)
		case "otlp":
			outputs = append(outputs, "--output", "otlp="+otlp.URL+"/v1/metrics")
		default:
			return fmt.Errorf("-outputs: unknown %q", o)
		}
	}
	// one returns a run's actions/s and its process CPU per action (µs;
	// the embedded server's included, the same in both kinds of run).
	one := func(with bool, i int) (float64, float64, error) {
		out := filepath.Join(dir, fmt.Sprintf("r%d-%v.json", i, with))
		args := append([]string{}, base...)
		if with {
			args = append(args, outputs...)
		}
		args = append(args, "-o", out)
		if code := cli.Main(args, io.Discard, io.Discard); code != 0 {
			return 0, 0, fmt.Errorf("%v: exit %d", args, code)
		}
		r, err := result.ReadFile(out)
		if err != nil {
			return 0, 0, err
		}
		for _, o := range r.Outputs {
			if o.Dropped || o.Lost > 0 {
				return 0, 0, fmt.Errorf("output %s: %+v", o.Name, o)
			}
		}
		sums := r.Repetitions[0].Summaries
		all := sums[len(sums)-1]
		n := float64(all.Total.Count)
		return n / all.DurationS, all.ClientCPUMean * all.DurationS / n * 1e6, nil
	}
	var without, with, cpu0, cpu1 []float64
	var runErr error
	err = benchkit.Locked("outputs", func() {
		fmt.Printf("web-static, %s users, %s steady, interval %s, %d cores, real Prometheus: %v, outputs %v\n", users, duration, interval, benchkit.Cores(), withProm, only)
		fmt.Printf("%-6s %-14s %14s %14s %16s %16s\n", "round", "order", "none act/s", "with act/s", "none CPU µs/act", "with CPU µs/act")
		for i := range rounds {
			order := []bool{false, true}
			if i%2 == 1 {
				order = []bool{true, false}
			}
			var a, b, ca, cb float64
			for _, w := range order {
				v, c, err := one(w, i)
				if err != nil {
					runErr = err
					return
				}
				if w {
					b, cb = v, c
				} else {
					a, ca = v, c
				}
			}
			without, with = append(without, a), append(with, b)
			cpu0, cpu1 = append(cpu0, ca), append(cpu1, cb)
			o := "none, with"
			if i%2 == 1 {
				o = "with, none"
			}
			fmt.Printf("%-6d %-14s %14.0f %14.0f %16.2f %16.2f\n", i+1, o, a, b, ca, cb)
		}
	})
	if err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	m0, m1 := benchkit.Median(without), benchkit.Median(with)
	fmt.Printf("median: none %.0f, with outputs %.0f actions/s: ratio %.3f\n", m0, m1, m1/m0)
	c0, c1 := benchkit.Median(cpu0), benchkit.Median(cpu1)
	fmt.Printf("median CPU per action: none %.2f µs, with outputs %.2f µs: ratio %.3f\n", c0, c1, c1/c0)
	return nil
}
