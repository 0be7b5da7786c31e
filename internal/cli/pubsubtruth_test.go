package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// pubsubBrokers are the real brokers of the cli's pub/sub truth tests.
var pubsubBrokers = []struct {
	name  string
	start func(t *testing.T) *testenv.Broker
}{
	{"nats-server", func(t *testing.T) *testenv.Broker { return testenv.NATSServer(t, testenv.NATSServerOptions{}) }},
	{"mosquitto", func(t *testing.T) *testenv.Broker { return testenv.Mosquitto(t, testenv.MosquittoOptions{}) }},
}

// eventOf returns an action's or event's summary in the whole run.
func eventOf(run *result.Run, name string) result.ActionSummary {
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	for i := len(all.Actions) - 1; i >= 0; i-- {
		if all.Actions[i].Name == name {
			return all.Actions[i]
		}
	}
	return result.ActionSummary{}
}

// Two segments of one plan started by hand (--segment 1/2 and 2/2, one
// --start-at) on one real broker, then merged: ipush-2 at 300 subscribers.
// Publishers 300, 302, 304 run in segment 1, 301 and 303 in segment 2;
// each subscriber is owed every message on its subject wherever it was
// published. Truth, from the publishes each part counted: each segment's
// 150 subscribers receive every message published, 30 per subject, so
// each part delivers (publishes of both parts) x 30; the merged result
// (publishes) x 60; no duplicate (the segments' stream numbers do not
// collide), nothing lost, and both parts name the same run. The truth
// needs every subscriber in before the first publish: the publishers
// start 2 s after the 1 s ramp, room for a loaded machine.
func TestPubSubSegments(t *testing.T) {
	for _, srv := range pubsubBrokers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			dir := t.TempDir()
			at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
			parts := []string{filepath.Join(dir, "p1.json"), filepath.Join(dir, "p2.json")}
			var wg sync.WaitGroup
			for k := range 2 {
				wg.Go(func() {
					code, stdout, stderr := throng(t, "run", "ipush-2", "--target", b.URL, "--subscribers", "300", "--duration", "2s",
						"--set", "ramp=1s", "--set", "start=3s", "--segment", fmt.Sprintf("%d/2", k+1), "--start-at", at, "-q", "-o", parts[k])
					if code != 0 {
						t.Errorf("segment %d/2: exit %d\n%s\n%s", k+1, code, stdout, stderr)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			var runs []*result.Run
			var published uint64
			for _, p := range parts {
				run, err := result.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				runs = append(runs, run)
				published += eventOf(run, "publish").OK
			}
			if runs[0].Meta.RunID == "" || runs[0].Meta.RunID != runs[1].Meta.RunID {
				t.Errorf("run ids %q and %q: the segments of one run must share one", runs[0].Meta.RunID, runs[1].Meta.RunID)
			}
			for k, run := range runs {
				// Each drain ends once both have the other's final counts,
				// well before the preset's 30 s bound.
				if drain := run.Repetitions[0].DrainS; drain > 10 {
					t.Errorf("segment %d/2: the drain took %.1f s", k+1, drain)
				}
				d := eventOf(run, "deliver")
				if d.OK != published*30 || d.ErrorsByClass["lost"] != 0 || d.Errors != 0 || eventOf(run, "duplicate").Count != 0 || eventOf(run, "missed").Count != 0 {
					t.Errorf("segment %d/2: delivered %d (want %d: every publish of both segments to its 150 subscribers), errors %v, duplicates %d, missed %d (%v)",
						k+1, d.OK, published*30, d.ErrorsByClass, eventOf(run, "duplicate").Count, eventOf(run, "missed").Count, d.Messages)
				}
			}
			whole := filepath.Join(dir, "whole.json")
			if code, stdout, stderr := throng(t, "merge", parts[0], parts[1], "-o", whole); code != 0 {
				t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
			}
			merged, err := result.ReadFile(whole)
			if err != nil {
				t.Fatal(err)
			}
			if d := eventOf(merged, "deliver"); d.OK != published*60 || d.Errors != 0 || eventOf(merged, "duplicate").Count != 0 {
				t.Errorf("merged: delivered %d of %d owed, errors %v, duplicates %d", d.OK, published*60, d.ErrorsByClass, eventOf(merged, "duplicate").Count)
			}
			t.Logf("%s: %d published, run %s", srv.name, published, runs[0].Meta.RunID)
		})
	}
}

// silencer forwards TCP connections to a server; silence makes every
// connection open now drop its bytes both ways, closing nothing (links
// that died without a word), while new connections are forwarded.
type silencer struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	links []*silentLink
}

type silentLink struct {
	c, s   net.Conn
	silent bool
}

func newSilencer(t *testing.T, to string) *silencer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silencer{ln: ln, to: to}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			l := &silentLink{c: c, s: s}
			p.mu.Lock()
			p.links = append(p.links, l)
			p.mu.Unlock()
			go p.pipe(l, s, c)
			go p.pipe(l, c, s)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.links {
			l.c.Close()
			l.s.Close()
		}
	})
	return p
}

func (p *silencer) pipe(l *silentLink, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		silent := l.silent
		p.mu.Unlock()
		if n > 0 && !silent {
			dst.Write(buf[:n])
		}
		if err != nil {
			if !silent {
				dst.Close()
			}
			return
		}
	}
}

func (p *silencer) silence() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.silent = true
	}
	return len(p.links)
}

// Every link dies without a word mid-run (the network, not the users):
// publishers go on writing into dead links, subscribers stop receiving and
// send nothing. The keep-alive (2 s) finds every dead connection, counts
// it (class timeout) and reconnects it; every delivery owed meanwhile is
// missed while disconnected — none is lost while connected, none is
// forgotten — so "loss == 0" fails the run (exit 1), and the summary says
// so in words.
func TestPubSubDeadLinks(t *testing.T) {
	for _, srv := range pubsubBrokers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			_, host, _ := strings.Cut(b.URL, "://")
			px := newSilencer(t, host)
			scheme, _, _ := strings.Cut(b.URL, "://")
			file := filepath.Join(t.TempDir(), "dead.yaml")
			os.WriteFile(file, []byte(`
phases: {steady: 6s, drain: 10s}
thresholds: ["all: loss == 0"]
groups:
  - {name: subscribers, users: 50, ramp_up: {duration: 300ms}}
  - name: publishers
    users: 5
    model: open
    start: 500ms
    actions: [{name: publish, rate: 50/s, size: 100B}]
pubsub: {subjects: 5, drain_idle: 1s, keepalive: 2s}
`), 0o644)
			silenced := make(chan int, 1)
			go func() {
				select {
				case <-time.After(2 * time.Second):
					silenced <- px.silence()
				case <-t.Context().Done():
				}
			}()
			out := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := throng(t, "run", file, "--target", scheme+"://"+px.ln.Addr().String(), "-o", out)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (loss == 0 failed)\n%s\n%s", code, stdout, stderr)
			}
			run, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			links := <-silenced
			deliver, missed, connect := eventOf(run, "deliver"), eventOf(run, "missed"), eventOf(run, "connect")
			if lost := deliver.ErrorsByClass["lost"]; lost != 0 || missed.ErrorsByClass["lost"] == 0 || missed.Errors != missed.Count {
				t.Errorf("lost while connected %d, missed while disconnected %d: want none lost while connected, some missed (%v %v)",
					lost, missed.ErrorsByClass["lost"], deliver.Messages, missed.Messages)
			}
			// 50 subscribers and 5 publishers (the links also hold the
			// closed preflight connection).
			if dead := connect.ErrorsByClass["timeout"]; dead != 55 || links < 55 {
				t.Errorf("%d connections found dead (%d links silenced), want 55 (%v)", dead, links, connect.Messages)
			}
			var loss *result.ThresholdOutcome
			for i := range run.Thresholds {
				if strings.Contains(run.Thresholds[i].Threshold, "loss") {
					loss = &run.Thresholds[i]
				}
			}
			if loss == nil || loss.Pass || uint64(loss.Value) != missed.Count {
				t.Errorf("threshold loss == 0: %+v, want failed at %d", loss, missed.Count)
			}
			want := "missed while disconnected " + strconv.FormatUint(missed.Count, 10)
			if missed.Count >= 1000 {
				want = "missed while disconnected "
			}
			if !strings.Contains(stdout, "Pub/sub delivery") || !strings.Contains(stdout, want) || !strings.Contains(stdout, "outages ") {
				t.Errorf("the summary does not give the breakdown:\n%s", stdout)
			}
			t.Logf("%s: %d delivered, %d missed while disconnected (%s)", srv.name, deliver.OK, missed.Count, missed.Messages["lost"])
		})
	}
}

// ipush-2 over a controller and two agent processes on one nats-server:
// the controller draws the run's id and sends it to both agents, whose
// segments meet on the broker: every publish reaches every subscriber of
// the plan (60 per subject), nothing is a duplicate, nothing lost.
func TestPubSubAgents(t *testing.T) {
	b := testenv.NATSServer(t, testenv.NATSServerOptions{})
	a1, _, _ := startAgentProcess(t)
	a2, _, _ := startAgentProcess(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("0123456789abcdef-token"), 0o600)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, "run", "ipush-2", "--target", b.URL, "--subscribers", "300", "--duration", "2s",
		"--set", "ramp=1s", "--set", "start=1500ms", "--agents", a1+","+a2, "--token-file", tok, "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	published := eventOf(run, "publish").OK
	d := eventOf(run, "deliver")
	if published == 0 || d.OK != published*60 || d.Errors != 0 || eventOf(run, "duplicate").Count != 0 || eventOf(run, "missed").Count != 0 {
		t.Errorf("delivered %d of %d owed (%d published), errors %v, duplicates %d, missed %d (%v)", d.OK, published*60, published,
			d.ErrorsByClass, eventOf(run, "duplicate").Count, eventOf(run, "missed").Count, d.Messages)
	}
	if run.Meta.RunID == "" {
		t.Error("no run id in the merged result")
	}
	if drain := run.Repetitions[0].DrainS; drain > 10 {
		t.Errorf("the drain took %.1f s: the agents did not get each other's final counts", drain)
	}
}
