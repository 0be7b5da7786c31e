// Command capacity runs throng's capacity search against a real server, a
// private nginx from internal/testenv on loopback (one worker, serving a
// 1-byte page), then confirms its answer with two longer runs: at 0.9× the
// capacity the SLOs must hold, at 1.1× one must fail. It says how many
// steps and how much wall time the search took (the goal: a
// default search within 10 steps and 10 minutes).
//
//	go run ./bench/capacity -slo "p99 < 5ms" -step 5s -confirm 30s [-rt]
//
// It builds throng from this tree and runs it as a user would:
//
//	throng capacity SCENARIO --target URL --slo ... --server-process PID --out cap.json
//	throng run SCENARIO --target URL --rate 0.9×C --duration 30s --threshold ...
//
// On one machine the generator shares the CPUs with nginx: when it
// saturates first the search says "generator-limited" and there is no
// capacity to confirm, which is the right answer, not a failure of the
// search. The machine is what it is: on a shared one, say so beside the
// figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/capacity:", err)
		os.Exit(1)
	}
}

func run() error {
	slo := flag.String("slo", "p99 < 5ms", "the SLO searched for")
	step := flag.Duration("step", 5*time.Second, "--step-duration of the search")
	budget := flag.String("budget", "10,10m", "--budget of the search")
	min := flag.Float64("min", 200, "--min (arrivals per second)")
	max := flag.Float64("max", 50000, "--max (arrivals per second)")
	confirm := flag.Duration("confirm", 30*time.Second, "the length of each confirming run")
	rt := flag.Bool("rt", false, "run throng in the real-time class (chrt --rr 1; root): on a machine kept busy by others the generator otherwise waits for a CPU, and the search rightly says generator-limited")
	flag.Parse()
	dir, err := os.MkdirTemp("", "throng-bench-capacity-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "throng")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/throng").CombinedOutput(); err != nil {
		return fmt.Errorf("building throng: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	srv, err := testenv.StartNginx(ctx, testenv.NginxOptions{Workers: 1})
	if err != nil {
		return err
	}
	defer srv.Stop()
	scen := filepath.Join(dir, "nginx-open.yaml")
	if err := os.WriteFile(scen, []byte(`name: nginx-open
model: open
users: 4000
open: {rate: 1000/s, arrivals: poisson, max_delay: 2s}
interval: 1s
phases: {ramp_up: {duration: 2s}, steady: 10s}
web: {keepalive: true, timeout: 10s}
actions: [{name: page, path: /one.html}]
`), 0o644); err != nil {
		return err
	}
	throng := func(args ...string) *exec.Cmd {
		if *rt {
			return exec.CommandContext(ctx, "chrt", append([]string{"--rr", "1", bin}, args...)...)
		}
		return exec.CommandContext(ctx, bin, args...)
	}
	out := filepath.Join(dir, "cap.json")
	var rec *capacity.Record
	var searchErr error
	lockErr := benchkit.Locked("bench/capacity", func() {
		start := time.Now()
		cmd := throng("capacity", scen, "--target", srv.URL, "--slo", *slo, "--server-process", strconv.Itoa(srv.PID),
			"--min", fmt.Sprint(*min), "--max", fmt.Sprint(*max), "--step-duration", step.String(), "--budget", *budget, "--out", out)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		took := time.Since(start)
		if rec, searchErr = capacity.ReadRecordFile(out); searchErr != nil {
			searchErr = errors.Join(err, searchErr)
			return
		}
		fmt.Printf("\nsearch: %s (exit %v), %d steps, %s wall time (%s of load)\n", rec.Status, exitCode(err), len(rec.Steps),
			took.Round(time.Second), time.Duration(rec.ElapsedS*float64(time.Second)).Round(time.Second))
		if rec.Status != capacity.Found {
			fmt.Println("no capacity to confirm:", rec.Statement)
			return
		}
		c := float64(rec.Max.Value)
		for _, k := range []float64{0.9, 1.1} {
			rate := fmt.Sprintf("%.1f/s", k*c)
			cmd := throng("run", scen, "--target", srv.URL, "--rate", rate, "--duration", confirm.String(),
				"--threshold", *slo, "--threshold", "dropped == 0", "--server-process", strconv.Itoa(srv.PID), "-q",
				"--out", filepath.Join(dir, fmt.Sprintf("confirm-%g.json", k)))
			b, err := cmd.CombinedOutput()
			code := exitCode(err)
			want := map[float64]int{0.9: 0, 1.1: 1}[k]
			verdict := "as expected"
			if code != want {
				verdict = fmt.Sprintf("NOT as expected (want exit %d)", want)
			}
			fmt.Printf("confirm at %.1f× = %s for %s: exit %d, %s\n", k, rate, confirm, code, verdict)
			if code != want {
				os.Stdout.Write(b)
			}
		}
	})
	return errors.Join(lockErr, searchErr)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
