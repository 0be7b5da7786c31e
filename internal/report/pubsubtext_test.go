package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
)

// pubsubResult is a pub/sub run whose subscribers were owed 300
// deliveries: 260 delivered, 4 lost while connected, 36 missed while
// disconnected in one outage of 1.5 s; 2 duplicates; 50 publishes asked,
// 45 done, 3 failed (their user reconnecting), 2 dropped; one
// slow-consumer cut-off and 7 broken connections.
func pubsubResult() *result.Run {
	events := []string{"deliver", "connect", "duplicate", "out_of_order", "missed", "outage", "slow_consumer"}
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{
		Scenario: "ipush", Driver: "pubsub", Target: "nats://127.0.0.1:1", Model: "groups", Users: 10, Segment: "1/1", Seed: 1, Speedup: 1,
		Actions: append([]string{"publish", "leave"}, events...), Events: events, Runs: 1,
		Settings: map[string]string{"publish_actions": "publish"}, Host: result.Host{Hostname: "box", Cores: 2},
		StartedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}}
	rep := result.Repetition{ElapsedS: 2}
	for i, ph := range []string{"steady", "drain"} {
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: ph, UsersMean: 6, UsersMax: 6}
		snaps := make([]metrics.ActionSnapshot, len(run.Meta.Actions))
		pub, leave, deliver, connect, dup, missed, outage, slow := &snaps[0], &snaps[1], &snaps[2], &snaps[3], &snaps[4], &snaps[6], &snaps[7], &snaps[8]
		if ph == "steady" {
			pub.Count, pub.Errors[driver.Dial], pub.Dropped = 48, 3, 2
			pub.Messages[driver.Dial] = "not connected: the connection broke, reconnecting"
			leave.Count = 5 // not a publish
			deliver.Count = 260
			for range 260 {
				deliver.Latency.Record(2000)
			}
			connect.Count, connect.Errors[driver.IO] = 7, 7
			dup.Count = 2
			outage.Count = 1
			outage.Latency.Record(1_500_000)
			slow.Count = 1
		} else {
			deliver.Count, deliver.Errors[driver.Lost] = 4, 4
			deliver.Messages[driver.Lost] = "4 of 300 owed deliveries never arrived while their subscribers were connected"
			missed.Count, missed.Errors[driver.Lost] = 36, 36
			missed.Messages[driver.Lost] = "36 owed deliveries were missed while their subscribers were disconnected by broken connections; outage 1 (1.00 s after the start, 1.50 s long, 7 connections broken): 36"
		}
		for k := range snaps {
			iv.Actions = append(iv.Actions, result.FromSnapshot(&snaps[k]))
		}
		rep.Intervals = append(rep.Intervals, iv)
	}
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	run.Repetitions = []result.Repetition{rep}
	return run
}

// The summary's pub/sub section gives the accounting that was only in the
// JSON: delivered, lost while connected, missed while disconnected with
// its outage, the publishes asked and done, the slow-consumer cut-offs.
func TestTextPubSubDelivery(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, pubsubResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "\nPub/sub delivery")
	if i < 0 {
		t.Fatalf("no pub/sub section in:\n%s", out)
	}
	out = out[i+1:]
	for _, want := range []string{
		"Pub/sub delivery (every subscriber, every stream of the plan; whole run):\n" +
			"  delivered 260, lost while connected 4, missed while disconnected 36 (loss 40); duplicates 2, out of order 0\n" +
			"  outages 1 (longest 1.50 s), connection failures and breaks 7, slow-consumer cut-offs 1\n" +
			"  publishes asked 50, done 45 (failed 3, dropped 2)\n",
		"  lost while connected: 4 of 300 owed deliveries never arrived while their subscribers were connected\n",
		"  missed while disconnected: 36 owed deliveries were missed while their subscribers were disconnected by broken connections; outage 1 (1.00 s after the start, 1.50 s long, 7 connections broken): 36\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// A mail run has no such section.
	b.Reset()
	if err := Text(&b, mailResult(nil, 6)); err != nil || strings.Contains(b.String(), "Pub/sub delivery") {
		t.Errorf("a mail run's summary has a pub/sub section (%v)", err)
	}
}
