package pubsub

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// realBrokers are the brokers a truth test runs against: the Debian
// nats-server and mosquitto (MQTT 3.1.1 and 5), started for the test.
var realBrokers = []struct {
	name, proto string
	start       func(t *testing.T) *testenv.Broker
}{
	{"nats-server", NATS, func(t *testing.T) *testenv.Broker { return testenv.NATSServer(t, testenv.NATSServerOptions{}) }},
	{"mosquitto", MQTT, func(t *testing.T) *testenv.Broker { return testenv.Mosquitto(t, testenv.MosquittoOptions{}) }},
	{"mosquitto-v5", MQTT5, func(t *testing.T) *testenv.Broker { return testenv.Mosquitto(t, testenv.MosquittoOptions{}) }},
}

// segment is one process's share of a distributed run in a test: its
// Config (decoded and prepared as segment k of n of run id), its events,
// and its users' sessions by ID.
type segment struct {
	c    *Config
	acts []driver.Action
	rec  *recorder
	subs map[int]driver.Session
	pubs map[int]driver.Session
}

// segments prepares n segments of one run of block against url.
func segments(t *testing.T, block, url, id string, n int) []*segment {
	t.Helper()
	var out []*segment
	for k := 1; k <= n; k++ {
		c, acts := setup(t, block, url)
		if err := c.Prepare(t.Context(), driver.Population{Run: id, Segment: k, Segments: n}); err != nil {
			t.Fatal(err)
		}
		out = append(out, &segment{c: c, acts: acts, rec: &recorder{}, subs: map[int]driver.Session{}, pubs: map[int]driver.Session{}})
	}
	// As processes started together: each Observe waits for the others.
	var wg sync.WaitGroup
	for _, sg := range out {
		wg.Go(func() { sg.c.Observe(sg.rec) })
		t.Cleanup(func() { sg.c.cur.Load().close() })
	}
	wg.Wait()
	return out
}

// open opens users of group with the IDs given, each in the segment that
// owns it (user i in segment i mod n + 1, as plan.Segment deals them).
func open(t *testing.T, segs []*segment, group string, ids ...int) {
	t.Helper()
	for _, id := range ids {
		sg := segs[id%len(segs)]
		s, err := sg.c.Open(t.Context(), driver.User{ID: id, Group: group})
		if err != nil {
			t.Fatalf("open %s %d: %v", group, id, err)
		}
		if group == "publishers" {
			sg.pubs[id] = s
		} else {
			sg.subs[id] = s
		}
	}
}

// publish makes publisher id publish count messages, in its segment.
func publish(t *testing.T, segs []*segment, id, count int) {
	t.Helper()
	sg := segs[id%len(segs)]
	publishAll(t, []driver.Session{sg.pubs[id]}, sg.acts[0], count)
}

// delivered waits until the segments' subscribers have accounted n
// deliveries in all.
func delivered(t *testing.T, segs []*segment, n uint64) {
	t.Helper()
	waitFor(t, func() bool {
		var got uint64
		for _, sg := range segs {
			got += sg.c.cur.Load().stats.delivered.Load()
		}
		return got == n
	})
}

// resolved waits until every subscription of the segments has been
// answered by the other segments (see control.go): from then on each is
// owed every message of theirs.
func resolved(t *testing.T, segs []*segment) {
	t.Helper()
	waitFor(t, func() bool {
		for _, sg := range segs {
			ctl := sg.c.cur.Load().ctl
			ctl.mu.Lock()
			n := len(ctl.pend)
			ctl.mu.Unlock()
			if n > 0 {
				return false
			}
		}
		return true
	})
}

// drainAll drains every segment at once (each waits for the others'
// final counts) and returns their accountings.
func drainAll(t *testing.T, segs []*segment) []tally {
	t.Helper()
	for _, sg := range segs {
		for _, s := range sg.pubs {
			s.Close()
		}
		for _, s := range sg.subs {
			s.Close()
		}
	}
	out := make([]tally, len(segs))
	var wg sync.WaitGroup
	for i, sg := range segs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := sg.c.Drain(ctx); err != nil {
				t.Errorf("segment %d: Drain: %v", i+1, err)
			}
			tl, _ := sg.c.Final()
			out[i] = tally(tl)
		})
	}
	wg.Wait()
	return out
}

// TestSegmentsOneBroker runs one plan as two segments (two Configs, as two
// processes would be) on one real broker: subscribers 0..7 and publishers
// 8 and 9 dealt round robin, one subject. Each subscriber is owed every
// message of both publishers wherever they run. Truth: 8 subscribers x
// (2 x 40 published + 1 suppressed) owed; the suppressed message (publisher
// 9's number 21, counted but never written, in segment 2) is lost by all
// eight, four in each segment, however far from its publisher; nothing is a
// duplicate (stream numbers are the publisher's global ID, not a number
// each process restarts). Then subscriber 10 joins mid-stream in segment
// 1: it is owed exactly what both publishers publish after its
// subscription (publisher 9's count comes from segment 2, which answered
// its probe).
func TestSegmentsOneBroker(t *testing.T) {
	for _, srv := range realBrokers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			segs := segments(t, "{protocol: "+srv.proto+", subjects: 1, qos: 0, drain_idle: 500ms}", b.URL, "seg"+srv.proto, 2)
			open(t, segs, "subscribers", 0, 1, 2, 3, 4, 5, 6, 7)
			open(t, segs, "publishers", 8, 9)
			resolved(t, segs)
			publish(t, segs, 8, 20)
			publish(t, segs, 9, 20)
			delivered(t, segs, 8*40)
			segs[1].c.cur.Load().reg.lookup(keyOf(9, 0)).sent.Add(1) // number 21 of publisher 9: never sent
			publish(t, segs, 8, 20)
			publish(t, segs, 9, 20)
			delivered(t, segs, 8*80)
			// Subscriber 10 joins in segment 1, and is resolved.
			open(t, segs, "subscribers", 10)
			resolved(t, segs)
			publish(t, segs, 8, 7)
			publish(t, segs, 9, 5)
			delivered(t, segs, 8*80+9*12)
			tls := drainAll(t, segs)
			want := []tally{{Expected: 4*81 + 12, Received: 4*80 + 12, Lost: 4}, {Expected: 4 * 81, Received: 4 * 80, Lost: 4}}
			for i := range 2 {
				want[i].Expected += 4 * 12
				want[i].Received += 4 * 12
				if tls[i] != want[i] {
					t.Errorf("segment %d: %+v, want %+v", i+1, tls[i], want[i])
				}
				rec := segs[i].rec
				if d, lost, c := rec.count(evDuplicate, driver.OK), rec.count(evDeliver, driver.Lost), rec.count(evDeliver, driver.Corrupt); d != 0 || lost != 4 || c != 0 {
					t.Errorf("segment %d: %d duplicates, %d lost, %d foreign; want 0, 4, 0 (%v)", i+1, d, lost, c, rec.msgs)
				}
				if n := rec.count(evDeliver, driver.Other); n != 0 {
					t.Errorf("segment %d: the accounting says it is incomplete: %v", i+1, rec.msgs)
				}
			}
		})
	}
}

// TestSegmentsLostBetween: a message lost on its way from one machine to
// another is counted lost by the subscriber's process. The two segments'
// subscribers all go through a proxy that holds back what the broker sends
// (one of segment 1's subscribers, on a connection of its own, held while
// its connection is up): messages published in segment 2 that it never
// receives are lost while connected, counted in segment 1 although their
// publisher ran in segment 2. Against nats-server and mosquitto (MQTT
// 3.1.1 and 5).
func TestSegmentsLostBetween(t *testing.T) {
	for _, srv := range realBrokers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.start(t).URL
			px := newProxy(t, hostOf(url))
			block := "{protocol: " + srv.proto + ", subjects: 1, drain_idle: 500ms, keepalive: 60s}"
			segs := segments(t, block, url, "between"+srv.name, 2)
			// Subscriber 0 (segment 1) through the proxy, in segment 1's run.
			scheme, _, _ := strings.Cut(url, "://")
			held, _ := setup(t, block, scheme+"://"+px.addr())
			held.cur.Store(segs[0].c.cur.Load())
			held.proto = segs[0].c.proto
			s0, err := held.Open(t.Context(), driver.User{ID: 0, Group: "subscribers"})
			if err != nil {
				t.Fatal(err)
			}
			segs[0].subs[0] = s0
			open(t, segs, "subscribers", 1, 2, 3)
			open(t, segs, "publishers", 5) // segment 2
			resolved(t, segs)
			publish(t, segs, 5, 10)
			delivered(t, segs, 4*10)
			px.pause() // what the broker sends subscriber 0 is held from now on
			publish(t, segs, 5, 6)
			delivered(t, segs, 4*10+3*6)
			tls := drainAll(t, segs)
			if want := (tally{Expected: 2 * 16, Received: 2*16 - 6, Lost: 6}); tls[0] != want {
				t.Errorf("segment 1: %+v, want %+v: subscriber 0 lost the 6 messages from segment 2 while connected", tls[0], want)
			}
			if want := (tally{Expected: 2 * 16, Received: 2 * 16}); tls[1] != want {
				t.Errorf("segment 2: %+v, want %+v", tls[1], want)
			}
			if lost := segs[0].rec.count(evDeliver, driver.Lost); lost != 6 {
				t.Errorf("segment 1 recorded %d lost, want 6 (%v)", lost, segs[0].rec.msgs)
			}
		})
	}
}

// TestRunsApart: two unrelated runs at once on one broker, with the same
// scenario (default subjects): each subscriber receives its own run's
// messages only: exact deliveries, nothing foreign, nothing duplicated.
// With subjects the scenario fixes (no {run}), the other run's messages
// do arrive, and are told apart by their run tag: counted foreign, never
// as deliveries of this run.
func TestRunsApart(t *testing.T) {
	for _, srv := range realBrokers[:2] {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.start(t)
			for _, fixed := range []bool{false, true} {
				block := "{protocol: " + srv.proto + ", subjects: 2, drain_idle: 300ms}"
				if fixed {
					block = "{protocol: " + srv.proto + ", subjects: 2, drain_idle: 300ms, subject: 'fixed.{n}'}"
				}
				var runs []*segment
				for i := range 2 {
					runs = append(runs, segments(t, block, b.URL, fmt.Sprintf("apart%v%d", fixed, i), 1)[0])
				}
				for _, r := range runs {
					ss := openAll(t, r.c, "subscribers", 0, 4)
					ps := openAll(t, r.c, "publishers", 4, 2) // subjects 0 and 1
					for i, s := range ss {
						r.subs[i] = s
					}
					for i, s := range ps {
						r.pubs[4+i] = s
					}
				}
				for _, r := range runs {
					publishAll(t, []driver.Session{r.pubs[4], r.pubs[5]}, r.acts[0], 25)
				}
				foreign := map[bool]uint64{false: 0, true: 100}[fixed]
				for _, r := range runs {
					st := &r.c.cur.Load().stats
					waitFor(t, func() bool { return st.delivered.Load() == 4*25 && st.corrupt.Load() == foreign })
				}
				for i, r := range runs {
					tl := drainAll(t, []*segment{r})[0]
					if tl != (tally{Expected: 100, Received: 100}) || r.rec.count(evDuplicate, driver.OK) != 0 || r.rec.count(evDeliver, driver.OK) != 100 {
						t.Errorf("fixed %v, run %d: %+v, %d deliveries, %d duplicates; want 100 owed and received, no other", fixed, i+1, tl,
							r.rec.count(evDeliver, driver.OK), r.rec.count(evDuplicate, driver.OK))
					}
					if got := r.rec.count(evDeliver, driver.Corrupt); uint64(got) != foreign || (fixed && !strings.Contains(strings.Join(r.rec.msgs, "\n"), "another throng run")) {
						t.Errorf("fixed %v, run %d: %d messages of the other run, want %d (%v)", fixed, i+1, got, foreign, r.rec.msgs)
					}
				}
			}
		})
	}
}
