package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/testenv"
)

// benchMemory measures the generator's resident memory per idle subscriber
// connection: throng runs a passive group only (connect, subscribe, wait),
// which starts 2 s into the run, connecting 1,000 a second. The baseline is
// the process's RSS before its first connection (the fd count has not
// grown), the loaded figure its RSS once every connection is open; the
// difference over the connections is the figure. throng's own gauge
// (pubsub_generator_bytes_per_connection: growth since the run began) is
// shown beside it.
func benchMemory(rounds int, ns []int) {
	fmt.Println("## Generator memory per idle subscriber connection (throng, passive group, RSS from /proc)")
	fmt.Println()
	fmt.Printf("%-5s %-11s %7s %10s %10s %13s %13s %12s\n", "round", "server", "subs", "base MB", "loaded MB", "per conn", "gauge/conn", "connect p99")
	type key struct {
		server string
		n      int
	}
	per := map[key][]float64{}
	gauge := map[key][]float64{}
	servers := []string{"mosquitto", "nats-server"}
	for r := 1; r <= rounds; r++ {
		for _, n := range ns {
			for i := range servers {
				srv := servers[(i+r-1)%len(servers)]
				var base, loaded, g, p99 float64
				locked(func() {
					var b *testenv.Broker
					var err error
					if srv == "mosquitto" {
						b, err = testenv.StartMosquitto(context.Background(), testenv.MosquittoOptions{})
					} else {
						b, err = testenv.StartNATSServer(context.Background(), testenv.NATSServerOptions{})
					}
					check(err)
					defer b.Stop()
					base, loaded, g, p99 = idleOnce(b.URL, n)
				})
				k := key{srv, n}
				pc := (loaded - base) * 1024 / float64(n)
				per[k] = append(per[k], pc)
				gauge[k] = append(gauge[k], g)
				fmt.Printf("%-5d %-11s %7d %10.1f %10.1f %13s %13s %9.1f ms\n", r, srv, n, base/1024, loaded/1024, kb(pc), kb(g), p99)
			}
		}
	}
	fmt.Println()
	fmt.Printf("%-11s %7s %13s %13s %8s %s\n", "median", "subs", "per conn", "gauge/conn", "target", "")
	for _, srv := range servers {
		target := 15.0
		if srv == "mosquitto" {
			target = 10
		}
		for _, n := range ns {
			k := key{srv, n}
			m := benchkit.Median(per[k])
			verdict := "met"
			if m > target*1024 {
				verdict = "MISSED"
			}
			fmt.Printf("%-11s %7d %13s %13s %5.0f KB %s\n", srv, n, kb(m), kb(benchkit.Median(gauge[k])), target, verdict)
		}
	}
	fmt.Println()
}

// idleOnce runs n idle subscribers against url and returns the RSS (KB)
// before and with every connection, throng's gauge (bytes per connection)
// and the connections' set-up p99 (ms).
func idleOnce(url string, n int) (baseKB, loadedKB, gauge, p99 float64) {
	ramp := time.Duration(n) * time.Millisecond // 1,000 connections a second
	steady := 2*time.Second + ramp + 6*time.Second
	file := write(fmt.Sprintf("idle-%d.yaml", n), fmt.Sprintf(`
phases: {steady: %s}
groups:
  - {name: subscribers, users: %d, start: 2s, ramp_up: {duration: %s}}
pubsub: {subjects: 5}
`, steady, n, ramp))
	ss, run := throngRun(200*time.Millisecond, file, "--target", url)
	if len(ss) < 3 {
		return 0, 0, 0, 0
	}
	// Baseline: the last sample before the group starts (2 s into the
	// run; the first half second is the process starting); loaded: the
	// mean of the samples with every connection open (the fd count at its
	// peak, at least n above the baseline's).
	st := run.Repetitions[0].StartedAt
	baseFDs, maxFDs := 0, 0
	for _, s := range ss {
		if s.t.Sub(ss[0].t) > 500*time.Millisecond && s.t.Before(st.Add(1800*time.Millisecond)) {
			baseKB, baseFDs = float64(s.rssKB), s.fds
		}
		maxFDs = max(maxFDs, s.fds)
	}
	if baseKB == 0 || maxFDs-baseFDs < n {
		fmt.Fprintf(os.Stderr, "bench/pubsub: %d idle subscribers: baseline %v KB with %d fds, at most %d fds\n", n, baseKB, baseFDs, maxFDs)
		return 0, 0, 0, 0
	}
	var sum, cnt float64
	for _, s := range ss {
		if s.fds >= maxFDs-2 {
			sum += float64(s.rssKB)
			cnt++
		}
	}
	loadedKB = sum / cnt
	gauge = counterPeak(run, "steady", "pubsub_generator_bytes_per_connection")
	p99 = actionOf(run, "all", "connect").Latency.P99Ms
	return baseKB, loadedKB, gauge, p99
}
