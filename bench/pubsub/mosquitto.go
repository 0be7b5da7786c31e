package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/testenv"
)

// benchMosquitto steps the publishers' rate of ipush-2's shape (subs
// subscribers, 5 publishers, 100 B) against mosquitto, each step a run of
// its own against a fresh broker, until a step loses a message, falls
// behind its asked rate by more than 2 %, or its delivery p99 passes
// bound: the last good step is the rate sustained.
func benchMosquitto(rounds, subs int, rates []int, steady, bound time.Duration) {
	fmt.Printf("## mosquitto capacity: %d subscribers, 5 publishers x R msg/s x 100 B, %v per step, sustained = zero loss, >= 98 %% of the asked rate, deliver p99 <= %v\n\n",
		subs, steady, bound)
	fmt.Printf("%-5s %6s %10s %12s %8s %10s %9s %12s  %s\n", "round", "R/s", "asked/s", "delivered/s", "lost", "p99 ms", "drain s", "server CPU", "verdict")
	var best []float64
	for r := 1; r <= rounds; r++ {
		sustained := 0.0
		for _, rate := range rates {
			asked := float64(5 * rate * (subs / 5))
			var got, lost, p99, drain, srvCores float64
			locked(func() {
				b, err := testenv.StartMosquitto(context.Background(), testenv.MosquittoOptions{})
				check(err)
				defer b.Stop()
				stopW := make(chan struct{})
				srv := watch(b.PID, 250*time.Millisecond, stopW)
				ss, run := throngRun(time.Second, "ipush-2", "--target", b.URL, "--subscribers", strconv.Itoa(subs),
					"--rate", fmt.Sprintf("%d/s", rate), "--duration", steady.String(), "--set", "ramp=3s", "--set", "start=4s")
				_ = ss
				close(stopW)
				sv := <-srv
				d := actionOf(run, "steady", "deliver")
				got = d.OKPerS
				p99 = d.Latency.P99Ms
				lost = float64(actionOf(run, "all", "deliver").ErrorsByClass["lost"] + actionOf(run, "all", "duplicate").Count)
				drain = run.Repetitions[0].DrainS
				// The server's CPU over the steady state (from 3 s to its end).
				st := run.Repetitions[0].StartedAt
				t0, t1 := st.Add(5*time.Second), st.Add(3*time.Second+steady-time.Second)
				srvCores = (cpuAt(sv, t1) - cpuAt(sv, t0)) / t1.Sub(t0).Seconds()
			})
			// The steady state starts at 3 s, the publishers at 4 s: the
			// first second has no deliveries.
			ok := lost == 0 && got >= 0.98*asked*(steady.Seconds()-1)/steady.Seconds() && p99 <= float64(bound.Milliseconds())
			verdict := "sustained"
			if !ok {
				verdict = "not sustained"
			}
			fmt.Printf("%-5d %6d %10.0f %12.0f %8.0f %10.1f %9.1f %9.2f cores  %s\n", r, rate, asked, got, lost, p99, drain, srvCores, verdict)
			if !ok {
				break
			}
			sustained = asked
		}
		best = append(best, sustained)
		fmt.Printf("round %d: highest sustained %.0f deliveries/s\n", r, sustained)
	}
	fmt.Printf("\nmedian highest sustained delivery rate against mosquitto: %.0f deliveries/s (%d rounds)\n\n", benchkit.Median(best), rounds)
}
