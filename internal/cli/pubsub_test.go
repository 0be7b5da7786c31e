package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
	"github.com/throng-io/throng/internal/textfmt"
)

// pubsubFigures are what a pub/sub run must account for exactly.
type pubsubFigures struct {
	publish, publishErrors, deliver, lost, dup, ooo, connects, connectErrors uint64
}

func pubsubTotals(t *testing.T, run *result.Run) pubsubFigures {
	t.Helper()
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	var f pubsubFigures
	for _, a := range all.Actions {
		switch a.Name {
		case "publish":
			f.publish, f.publishErrors = a.OK, a.Errors
		case "deliver":
			f.deliver, f.lost = a.OK, a.ErrorsByClass["lost"]
		case "duplicate":
			f.dup = a.Count
		case "out_of_order":
			f.ooo = a.Count
		case "connect":
			f.connects, f.connectErrors = a.OK, a.Errors
		}
	}
	return f
}

// checkExact asserts zero loss and the exact delivery count. The
// accounting file (one line per subscriber and publisher) says what each
// subscriber expected: every message published while it was subscribed.
// When every subscriber was in before the first publish (the preset's
// timing), that is every message of its subject: each publish reaches
// subscribers/5 subscribers, once.
func checkExact(t *testing.T, run *result.Run, subscribers int, accounting string) pubsubFigures {
	t.Helper()
	f := pubsubTotals(t, run)
	if f.lost != 0 || f.dup != 0 || f.ooo != 0 || f.connectErrors != 0 || f.connects != uint64(subscribers+5) || f.publishErrors != 0 {
		t.Errorf("lost %d, duplicates %d, out of order %d, connections %d (%d failed), publish errors %d; want 0 0 0 %d 0 0",
			f.lost, f.dup, f.ooo, f.connects, f.connectErrors, f.publishErrors, subscribers+5)
	}
	csv, err := os.ReadFile(accounting)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")[1:]
	// Every delivery is either owed (received) or arrived before its
	// subscriber's subscription was confirmed (early: on a loaded machine
	// a subscriber may take its confirmation in after the first publishes).
	var expected, received, early uint64
	subs := map[string]bool{}
	for _, l := range lines {
		c := strings.Split(l, ",")
		e, _ := strconv.ParseUint(c[4], 10, 64)
		r, _ := strconv.ParseUint(c[5], 10, 64)
		y, _ := strconv.ParseUint(c[9], 10, 64)
		expected, received, early = expected+e, received+r, early+y
		subs[c[0]] = true
	}
	if len(subs) != subscribers || expected != received || received+early != f.deliver || f.publish == 0 {
		t.Errorf("accounting of %d subscribers: expected %d, received %d, early %d; %d delivered", len(subs), expected, received, early, f.deliver)
	}
	ramp := result.Find(run.Repetitions[0].Summaries, "ramp-up")
	if ramp != nil && ramp.Actions[2].OK == uint64(subscribers) && f.deliver != f.publish*uint64(subscribers/5) {
		t.Errorf("every subscriber was in before the publishers: %d published, %d delivered, want %d",
			f.publish, f.deliver, f.publish*uint64(subscribers/5))
	}
	return f
}

// counterMean returns a series' mean in a phase's summary of the pubsub
// counter source (ok false when absent); counterPeak its peak.
func counterMean(run *result.Run, phase, series string) (float64, bool) {
	return counterOf(run, phase, series, false)
}

func counterPeak(run *result.Run, phase, series string) (float64, bool) {
	return counterOf(run, phase, series, true)
}

func counterOf(run *result.Run, phase, series string, peak bool) (float64, bool) {
	s := result.Find(run.Repetitions[0].Summaries, phase)
	if s == nil {
		return 0, false
	}
	for _, c := range s.Counters {
		if c.Source == "pubsub" {
			m := c.Mean
			if peak {
				m = c.Peak
			}
			v, ok := m[series]
			return v, ok
		}
	}
	return 0, false
}

// The zero-setup command: ipush-2 scaled down, against the embedded
// brokers (NATS, then MQTT), with nothing installed.
func TestPubSubEmbedded(t *testing.T) {
	for _, proto := range []string{"auto", "mqtt"} {
		t.Run(proto, func(t *testing.T) {
			acc := filepath.Join(t.TempDir(), "acc.csv")
			run := runResult(t, "run", "ipush-2", "--subscribers", "300", "--duration", "2s",
				"--set", "ramp=1s", "--set", "start=1200ms", "--set", "protocol="+proto, "--set", "accounting="+acc)
			f := checkExact(t, run, 300, acc)
			if rate, ok := counterMean(run, "steady", "pubsub_published_total"); !ok || rate < 100 || rate > 260 {
				t.Errorf("published %.0f/s in the steady state (ok %v), asked 175/s", rate, ok)
			}
			if asked, ok := counterPeak(run, "steady", "pubsub_publish_asked_per_second"); !ok || asked != 175 {
				t.Errorf("asked rate %.0f/s (ok %v), want 175", asked, ok)
			}
			if _, ok := counterMean(run, "steady", "pubsub_backlog_messages"); !ok {
				t.Error("no backlog gauge in the steady state")
			}
			if run.Repetitions[0].DrainS <= 0 {
				t.Error("no drain time recorded")
			}
			t.Logf("%s: %d published, %d delivered, drain %.3fs", proto, f.publish, f.deliver, run.Repetitions[0].DrainS)
		})
	}
}

// The iPush study at full scale (3,000 subscribers), shortened in time, against
// the real nats-server and mosquitto: both presets, zero loss, the exact
// delivery count, and the server's CPU and memory read beside the load.
func TestPubSubRealServers(t *testing.T) {
	servers := []struct {
		name  string
		start func(t *testing.T) *testenv.Broker
	}{
		{"nats-server", func(t *testing.T) *testenv.Broker { return testenv.NATSServer(t, testenv.NATSServerOptions{}) }},
		{"mosquitto", func(t *testing.T) *testenv.Broker { return testenv.Mosquitto(t, testenv.MosquittoOptions{}) }},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			for _, preset := range []string{"ipush-1", "ipush-2"} {
				t.Run(preset, func(t *testing.T) {
					acc := filepath.Join(t.TempDir(), "acc.csv")
					run := runResult(t, "run", preset, "--target", b.URL, "--duration", "2s", "--set", "accounting="+acc,
						"--set", "ramp=2500ms", "--set", "start=3500ms", "--server-process", strconv.Itoa(b.PID))
					f := checkExact(t, run, 3000, acc)
					all := result.Find(run.Repetitions[0].Summaries, result.All)
					rows := map[string]bool{}
					for _, r := range all.Server {
						rows[r.ID] = true
					}
					if !rows["server_cpu_pct"] || !rows["server_rss_mb"] {
						t.Errorf("server rows %v: want the server's CPU and memory", rows)
					}
					peak, _ := counterPeak(run, "steady", "pubsub_backlog_messages")
					t.Logf("%s %s: %d published, %d delivered, drain %.2fs, backlog peak %.0f", srv.name, preset,
						f.publish, f.deliver, run.Repetitions[0].DrainS, peak)
				})
			}
		})
	}
}

// The nats and mqtt families serve one broker each (`throng serve nats`).
func TestServePubSubFamilies(t *testing.T) {
	for _, name := range []string{"nats", "mqtt", "pubsub"} {
		tgt, err := newPreparer().StartEmbedded(name, "127.0.0.1:0")
		if err != nil {
			t.Fatalf("serve %s: %v", name, err)
		}
		if err := tgt.Close(); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
		t.Logf("%s served at %s", name, tgt.URL())
	}
}

// A broker killed mid-run (SIGKILL) and started again: every connection
// breaks and is counted, subscribers and publishers reconnect with
// back-off, publishes during the outage fail (class dial) rather than
// vanish, the run goes on and reports. Every delivery owed over the run
// is accounted: what the subscribers could not receive while they were
// away is missed while disconnected, attributed to its outage, and counts
// in "loss": the run fails its "loss == 0" exactly when anything was
// missed or lost. Nothing is lost while connected (the broker drops
// nothing while it runs). The exact counts of each kind are checked in the
// driver's TestBrokerKilled.
func TestPubSubBrokerRestart(t *testing.T) {
	servers := []struct {
		name  string
		start func(t *testing.T) *testenv.Broker
	}{
		{"nats-server", func(t *testing.T) *testenv.Broker { return testenv.NATSServer(t, testenv.NATSServerOptions{}) }},
		{"mosquitto", func(t *testing.T) *testenv.Broker { return testenv.Mosquitto(t, testenv.MosquittoOptions{}) }},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			file := filepath.Join(t.TempDir(), "restart.yaml")
			os.WriteFile(file, []byte(`
phases: {steady: 6s, drain: 10s}
thresholds: ["all: loss == 0"]
groups:
  - {name: subscribers, users: 200, ramp_up: {duration: 500ms}}
  - name: publishers
    users: 5
    model: open
    start: 600ms
    actions: [{name: publish, rate: 50/s, size: 100B}]
pubsub: {subjects: 5, drain_idle: 1s}
`), 0o644)
			done := make(chan struct{})
			go func() {
				defer close(done)
				select {
				case <-time.After(3 * time.Second):
				case <-t.Context().Done():
					return
				}
				if err := b.Kill(t.Context(), 500*time.Millisecond); err != nil {
					t.Errorf("kill and restart: %v", err)
				}
			}()
			out := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := throng(t, "run", file, "--target", b.URL, "-o", out)
			<-done
			run, err := result.ReadFile(out)
			if err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, stdout, stderr)
			}
			f := pubsubTotals(t, run)
			connect, deliver, missed := eventOf(run, "connect"), eventOf(run, "deliver"), eventOf(run, "missed")
			loss := deliver.ErrorsByClass["lost"] + missed.ErrorsByClass["lost"]
			if want := map[bool]int{false: 0, true: 1}[loss > 0]; code != want {
				t.Errorf("exit %d with %d lost and %d missed: want %d (loss == 0)\n%s", code, deliver.ErrorsByClass["lost"], missed.ErrorsByClass["lost"], want, stdout)
			}
			if lost := deliver.ErrorsByClass["lost"]; lost != 0 {
				t.Errorf("%d lost while connected, want 0: %s", lost, deliver.Messages["lost"])
			}
			if broke := connect.ErrorsByClass["io"]; broke != 205 {
				t.Errorf("%d connections counted broken, want 205 (%v)", broke, connect.Messages)
			}
			if f.connects < 410 {
				t.Errorf("%d connections set up, want the 205 twice", f.connects)
			}
			if eventOf(run, "outage").Count == 0 {
				t.Error("no outage recorded")
			}
			if n, _ := counterPeak(run, "steady", "pubsub_broken_connections"); n == 0 {
				t.Error("no broken connections in the counters")
			}
			if missed.Count > 0 && !strings.Contains(missed.Messages["lost"], "connections broken): ") {
				t.Errorf("missed %d, not attributed to an outage: %q", missed.Count, missed.Messages["lost"])
			}
			if !strings.Contains(stdout, "Pub/sub delivery") || !strings.Contains(stdout, "publishes asked ") {
				t.Errorf("no pub/sub section in the summary:\n%s", stdout)
			}
			// The summary's breakdown is this run's, in words: what was
			// delivered and missed, and the publishes done and failed.
			publish, num := eventOf(run, "publish"), func(v uint64) string { return textfmt.Num(float64(v)) }
			for _, want := range []string{
				fmt.Sprintf("delivered %s, lost while connected 0, missed while disconnected %s (loss %s)",
					num(deliver.OK), num(missed.ErrorsByClass["lost"]), num(loss)),
				fmt.Sprintf(", done %s (failed %s, dropped %s)", num(publish.OK), num(publish.Errors), num(publish.Dropped)),
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the summary does not say %q:\n%s", want, stdout)
				}
			}
			if publish.Errors == 0 {
				t.Error("no publish failed while the broker was down")
			}
			// Deliveries go on after the restart, in the last intervals.
			var late uint64
			for _, iv := range run.Repetitions[0].Intervals {
				if iv.StartS >= 5 && iv.Phase == "steady" {
					late += iv.Actions[1].Count
				}
			}
			if late == 0 {
				t.Error("no delivery after the restart")
			}
			if i := strings.Index(stdout, "Pub/sub delivery"); i >= 0 {
				t.Log(stdout[i:])
			}
			t.Logf("%s: %d published (%d failed during the outage), %d delivered, %d missed while disconnected (%s), %d connections set up", srv.name,
				f.publish, f.publishErrors, f.deliver, missed.Count, missed.Messages["lost"], f.connects)
		})
	}
}

// The presets scale with --subscribers, --rate and --size: ipush-1
// (10 msg/s of 1,000 B) asked for 20 msg/s of 300 B per publisher.
func TestPubSubPresetScaling(t *testing.T) {
	acc := filepath.Join(t.TempDir(), "acc.csv")
	run := runResult(t, "run", "ipush-1", "--subscribers", "50", "--rate", "20/s", "--size", "300B", "--duration", "1500ms",
		"--set", "ramp=500ms", "--set", "start=700ms", "--set", "accounting="+acc)
	f := checkExact(t, run, 50, acc)
	if asked, ok := counterPeak(run, "steady", "pubsub_publish_asked_per_second"); !ok || asked != 100 {
		t.Errorf("asked rate %.0f/s (ok %v), want 5 x 20/s", asked, ok)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	for _, a := range all.Actions {
		// A NATS PUB frame: the 300 B payload and a header line of ~20 B.
		if per := a.BytesOutPerS / a.OKPerS; a.Name == "publish" && (per < 300 || per > 340) {
			t.Errorf("%.0f bytes written per publish, want the 300 B payload and the frame's header", per)
		}
	}
	t.Logf("%d published, %d delivered", f.publish, f.deliver)
}

// Devices that publish, disconnect and connect again at their own rates
// (op: disconnect, op: connect), against the embedded brokers: the
// actions are counted, every publish that failed did so while its device
// was away (class dial), nothing is lost, every subscriber received exactly
// what it expected, and a device away missed what was published meanwhile
// (fewer deliveries than publishes times devices).
func TestPubSubDeviceActions(t *testing.T) {
	const devices = 10
	for _, proto := range []string{"auto", "mqtt"} {
		t.Run(proto, func(t *testing.T) {
			dir := t.TempDir()
			acc := filepath.Join(dir, "acc.csv")
			file := filepath.Join(dir, "devices.yaml")
			src := `phases: {steady: 2s, drain: 10s}
groups:
  - name: devices
    users: ` + strconv.Itoa(devices) + `
    model: open
    actions:
      - {name: publish, rate: 20/s, size: 100B}
      - {name: leave, op: disconnect, rate: 2/s}
      - {name: back, op: connect, rate: 4/s}
pubsub:
  protocol: ` + proto + `
  subjects: 2
  subscribe: {devices: all}
  drain_idle: 1s
  accounting_file: ` + acc + "\n"
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			run := runResult(t, "run", file, "--target", "embedded")
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			var leave, back, publish, deliver *result.ActionSummary
			for i := range all.Actions {
				switch a := &all.Actions[i]; a.Name {
				case "leave":
					leave = a
				case "back":
					back = a
				case "publish":
					publish = a
				case "deliver":
					deliver = a
				}
			}
			if leave == nil || back == nil || publish == nil || deliver == nil {
				t.Fatalf("actions %v: want leave, back, publish and deliver", all.Actions)
			}
			if leave.OK == 0 || leave.Errors != 0 || back.OK == 0 || back.Errors != 0 {
				t.Errorf("leave %d ok %d errors, back %d ok %d errors: want some, none failed (%v %v)",
					leave.OK, leave.Errors, back.OK, back.Errors, leave.Messages, back.Messages)
			}
			if publish.OK == 0 || publish.Errors != publish.ErrorsByClass["dial"] {
				t.Errorf("publish: %d ok, errors %v: want only dial errors (while away)", publish.OK, publish.ErrorsByClass)
			}
			if lost := deliver.ErrorsByClass["lost"]; lost != 0 || deliver.OK == 0 {
				t.Errorf("delivered %d, lost %d: want none lost (%v)", deliver.OK, lost, deliver.Messages)
			}
			if deliver.OK >= publish.OK*devices {
				t.Errorf("delivered %d of %d published to %d devices: the devices away should have missed some", deliver.OK, publish.OK, devices)
			}
			csv, err := os.ReadFile(acc)
			if err != nil {
				t.Fatal(err)
			}
			var expected, received uint64
			for _, l := range strings.Split(strings.TrimSpace(string(csv)), "\n")[1:] {
				c := strings.Split(l, ",")
				e, _ := strconv.ParseUint(c[4], 10, 64)
				r, _ := strconv.ParseUint(c[5], 10, 64)
				expected, received = expected+e, received+r
			}
			if expected == 0 || expected != received {
				t.Log(string(csv))
				t.Errorf("accounting: expected %d, received %d", expected, received)
			}
			t.Logf("%s: %d published (%d while away), %d delivered, %d disconnects, %d connects", proto,
				publish.OK, publish.Errors, deliver.OK, leave.OK, back.OK)
		})
	}
}

// TestPubSubDeviceSubscribe: devices without a group subscription
// subscribe mid-run (op subscribe, one subject, then all of them): the
// subscribe action succeeds, what they receive is exactly what is expected
// of them (nothing lost), and there are deliveries only after subscribing.
func TestPubSubDeviceSubscribe(t *testing.T) {
	for _, proto := range []string{"auto", "mqtt"} {
		t.Run(proto, func(t *testing.T) {
			dir := t.TempDir()
			acc := filepath.Join(dir, "acc.csv")
			file := filepath.Join(dir, "devices.yaml")
			src := `phases: {steady: 2s, drain: 10s}
groups:
  - name: devices
    users: 5
    model: open
    actions:
      - {name: publish, rate: 20/s, size: 100B}
      - {name: join, op: subscribe, subject: 0, rate: 2/s}
      - {name: join_all, op: subscribe, subject: wildcard, rate: 1/s}
pubsub:
  protocol: ` + proto + `
  subjects: 2
  drain_idle: 1s
  accounting_file: ` + acc + "\n"
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			run := runResult(t, "run", file, "--target", "embedded")
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			var join, deliver *result.ActionSummary
			for i := range all.Actions {
				switch a := &all.Actions[i]; a.Name {
				case "join":
					join = a
				case "deliver":
					deliver = a
				}
			}
			if join == nil || deliver == nil {
				t.Fatalf("actions %v: want join and deliver", all.Actions)
			}
			if join.OK == 0 || join.Errors != 0 {
				t.Errorf("join: %d ok, %d errors (%v): want some, none failed", join.OK, join.Errors, join.Messages)
			}
			if lost := deliver.ErrorsByClass["lost"]; lost != 0 || deliver.OK == 0 {
				t.Errorf("delivered %d, lost %d: want some, none lost (%v)", deliver.OK, lost, deliver.Messages)
			}
			csv, err := os.ReadFile(acc)
			if err != nil {
				t.Fatal(err)
			}
			var expected, received uint64
			for _, l := range strings.Split(strings.TrimSpace(string(csv)), "\n")[1:] {
				c := strings.Split(l, ",")
				e, _ := strconv.ParseUint(c[4], 10, 64)
				r, _ := strconv.ParseUint(c[5], 10, 64)
				expected, received = expected+e, received+r
			}
			if expected == 0 || expected != received {
				t.Log(string(csv))
				t.Errorf("accounting: expected %d, received %d", expected, received)
			}
		})
	}
}

// Connecting is timed and counted in every pub/sub run, against both real
// brokers: each subscriber's connection is one "connect" event, ok, in
// the phase it began in (the ramp-up); a wrong password is refused before
// the load, with a non-zero exit and the broker's refusal, never the
// password.
func TestPubSubConnectAndWrongPassword(t *testing.T) {
	const user, password = "throng", "pubsub-test-pw"
	for _, srv := range []struct {
		name  string
		start func(t *testing.T) *testenv.Broker
	}{
		{"nats-server", func(t *testing.T) *testenv.Broker {
			return testenv.NATSServer(t, testenv.NATSServerOptions{Username: user, Password: password})
		}},
		{"mosquitto", func(t *testing.T) *testenv.Broker {
			return testenv.Mosquitto(t, testenv.MosquittoOptions{Username: user, Password: password})
		}},
	} {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			file := filepath.Join(t.TempDir(), "ps.yaml")
			os.WriteFile(file, []byte(`
phases: {steady: 1s, drain: 5s}
groups:
  - name: subscribers
    users: 4
    ramp_up: {duration: 800ms}
  - name: publishers
    users: 1
    model: open
    start: 1s
    actions: [{name: publish, rate: 10/s, size: 100B}]
pubsub:
  username: `+user+`
  password: ${PUBSUB_TEST_PW}
  subjects: 1
`), 0o644)
			t.Setenv("PUBSUB_TEST_PW", password)
			run := runResult(t, "run", file, "--target", b.URL)
			counts := map[string]uint64{}
			for _, ph := range []string{"ramp-up", "steady", result.All} {
				if s := result.Find(run.Repetitions[0].Summaries, ph); s != nil {
					for _, a := range s.Actions {
						if a.Name == "connect" {
							counts[ph] = a.OK
							if a.Errors != 0 {
								t.Errorf("%s: connect errors %v", ph, a.Messages)
							}
						}
					}
				}
			}
			// 4 subscribers connect in the ramp-up; the publisher connects at
			// its first publish, in the steady state.
			if counts["ramp-up"] != 4 || counts[result.All] != 5 {
				t.Errorf("connects by phase %v, want 4 in the ramp-up of 5", counts)
			}

			t.Setenv("PUBSUB_TEST_PW", "wrong-"+password)
			code, stdout, stderr := throng(t, "run", file, "--target", b.URL, "-q", "-o", filepath.Join(t.TempDir(), "w.json"))
			if code != ExitFailure || !strings.Contains(stderr, "(the server refused the credentials: nothing was run)") || strings.Contains(stdout+stderr, "wrong-"+password) {
				t.Errorf("wrong password: exit %d\n%s\n%s", code, stdout, stderr)
			}
			t.Logf("wrong password: exit %d: %s", code, strings.TrimSpace(stderr))
		})
	}
}
