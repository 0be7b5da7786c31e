package mail

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

// truthScenario has six users; user0001 sends. "three" owes 3 deliveries,
// "list" (the server's list, described inline) 3, "one" 1.
const truthScenario = `
users: 6
model: open
phases: {steady: 1m}
mail:
  mode: %s
  timeout: 5s
  population: {inbox: 2, deleted: 0, folders: 0, size: 2KB, sizes: fixed, calendar: 0, contacts: 0}
  lists:
    members:
      list001: [user0003, user0005, user0006@example.test]
actions:
  - {name: three, kind: send, to: [user0002@example.test, user0003@example.test, user0004@example.test], size: 2KB, sizes: fixed, rate: 1/s}
  - {name: list, kind: send, to: [list001@example.test], size: 2KB, sizes: fixed, rate: 1/s}
  - {name: one, kind: send, to: [user0005@example.test], size: 2KB, sizes: fixed, rate: 1/s}
`

// markSeq reads the message number of a message's X-Throng-Mark.
var markSeq = regexp.MustCompile(`(?m)^X-Throng-Mark: [0-9a-f]+\.(\d+)\r?$`)

func seqOf(msg []byte) int {
	m := markSeq.FindSubmatch(msg)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// truthRoutes are the faults: what the server does with message N (the
// accounts it was for, lists expanded, in to).
var truthRoutes = map[int]func(to []string) []string{
	2: func([]string) []string { return nil }, // the list's message: dropped for all 3
	4: func(to []string) []string { // "three": user0003's copy dropped
		return without(to, "user0003")
	},
	5:  func([]string) []string { return []string{"user0002"} },                         // the list's: all 3 misrouted to one who is none of them
	7:  func(to []string) []string { return append(to, to...) },                         // "three": each recipient twice
	9:  func(to []string) []string { return append(to, "user0001") },                    // "one": also a copy to the sender
	10: func([]string) []string { return []string{"user0002", "user0002", "user0003"} }, // "three": user0002 twice, user0003, not user0004
}

func without(to []string, name string) []string {
	var out []string
	for _, n := range to {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// The truth, per message (three, list, one, three, ...): deliveries owed
// and seen, lost, misdelivered and duplicated copies. 12 messages owe 28
// deliveries: 20 seen, 8 lost; 2 copies misdelivered, 4 duplicated.
var truthPerMessage = []struct{ owed, seen, lost, mis, dup int }{
	{3, 3, 0, 0, 0}, {3, 0, 3, 0, 0}, {1, 1, 0, 0, 0},
	{3, 2, 1, 0, 0}, {3, 0, 3, 1, 0}, {1, 1, 0, 0, 0},
	{3, 3, 0, 0, 3}, {3, 3, 0, 0, 0}, {1, 1, 0, 1, 0},
	{3, 2, 1, 0, 1}, {3, 3, 0, 0, 0}, {1, 1, 0, 0, 0},
}

// Ground truth against the embedded server: messages dropped, misrouted
// and duplicated on purpose, to several recipients and a list. Every
// delivery owed is counted once per recipient, delivered or lost; every
// copy in a mailbox that was none of its recipients' is misdelivered
// (found by the drain in a mailbox that was owed nothing too), every
// extra copy in a recipient's is a duplicate; each event's cause is the
// submission of its own message. Online: nobody looks during the load,
// the drain finds everything (untimed). Cached: the IDLE watchers see the
// deliveries as they come (timed); the drain finds what they did not.
// A second repetition (Observe again) owes nothing from the first.
func TestDeliveryTruthEmbedded(t *testing.T) {
	for _, mode := range []string{Online, Cached} {
		t.Run(mode, func(t *testing.T) {
			srv := mailtest.Embedded(t)
			srv.Store().SetFaults(func(msg []byte, to []string) []string {
				if r := truthRoutes[seqOf(msg)]; r != nil {
					return r(to)
				}
				return to
			})
			c, acts := load(t, fmt.Sprintf(truthScenario, mode), srv.URL())
			c.Provisioner = srv
			ev := &events{}
			c.Observe(ev)
			prepare(t, c, 6, 3)
			ss := open(t, c, 6)
			var windows [][2]time.Time // each send's submission, from before to after
			for i := range truthPerMessage {
				a := acts[[]string{"three", "list", "one"}[i%3]]
				t0 := time.Now()
				if _, err := ss[0].Do(context.Background(), a); err != nil {
					t.Fatal(err)
				}
				windows = append(windows, [2]time.Time{t0, time.Now()})
			}
			var want struct{ owed, seen, lost, mis, dup int }
			for _, m := range truthPerMessage {
				want.owed, want.seen, want.lost, want.mis, want.dup = want.owed+m.owed, want.seen+m.seen, want.lost+m.lost, want.mis+m.mis, want.dup+m.dup
			}
			if got := c.track.owedTotal(); got != want.owed {
				t.Fatalf("%d deliveries owed, want %d", got, want.owed)
			}
			if mode == Cached {
				// The watchers see every delivery as it comes.
				deadline := time.Now().Add(10 * time.Second)
				for ev.timed() < want.seen && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			for _, s := range ss {
				s.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			c.Drain(ctx)
			ev.mu.Lock()
			defer ev.mu.Unlock()
			got := [3]int{ev.byEvent[evDeliver], ev.byEvent[evMisdeliver], ev.byEvent[evDuplicate]}
			if got != [3]int{want.owed, want.mis, want.dup} || ev.byClass[driver.OK] != want.seen || ev.byClass[driver.Lost] != want.lost ||
				ev.byClass[driver.Misdelivered] != want.mis || ev.byClass[driver.Duplicate] != want.dup {
				t.Errorf("deliver/misdeliver/duplicate events %v, want [%d %d %d]; by class %v, want %d ok, %d lost, %d misdelivered, %d duplicate",
					got, want.owed, want.mis, want.dup, ev.byClass, want.seen, want.lost, want.mis, want.dup)
			}
			timed := len(ev.lat)
			if mode == Online && timed != 0 || mode == Cached && timed != want.seen {
				t.Errorf("%s: %d deliveries timed, want %d", mode, timed, map[string]int{Online: 0, Cached: want.seen}[mode])
			}
			// Each event's cause is its own message's submission.
			perMessage := make([]int, len(windows))
			for _, e := range ev.log {
				k := -1
				for i, w := range windows {
					if !e.cause.Before(w[0]) && !e.cause.After(w[1]) {
						k = i
					}
				}
				if k < 0 {
					t.Fatalf("an event (%d, %v) caused at %v, during no send", e.ev, e.class, e.cause)
				}
				perMessage[k]++
			}
			for i, m := range truthPerMessage {
				if n := m.owed + m.mis + m.dup; perMessage[i] != n {
					t.Errorf("message %d: %d events caused by its submission, want %d", i+1, perMessage[i], n)
				}
			}
			for _, want := range []string{"never reached user0003's INBOX", "was found in user0002's INBOX, and user0002 is none of its recipients",
				"it went to distribution lists", "reached user0002's INBOX more than once", "was found in user0001's INBOX"} {
				if !strings.Contains(strings.Join(ev.msgs, "\n"), want) {
					t.Errorf("no sample message says %q:\n%s", want, strings.Join(ev.msgs, "\n"))
				}
			}
			// The next repetition starts afresh: nothing owed, nothing lost again.
			ev2 := &events{}
			c.Observe(ev2)
			ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
			defer cancel2()
			c.Drain(ctx2)
			if n := len(ev2.log); n != 0 || c.track.owedTotal() != 0 {
				t.Errorf("a new repetition recorded %d events of the last one's messages (%v)", n, ev2.byClass)
			}
		})
	}
}

// What the run cannot account for is said on its log: list members
// outside the run (at Prepare), and mailboxes the drain had no time to
// look at (their late misdeliveries are not counted).
func TestDeliveryLogSaysWhatIsNotCounted(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, fmt.Sprintf(truthScenario, Online), srv.URL())
	c.Provisioner = srv
	var log []string
	c.SetLog(func(line string) { log = append(log, line) })
	c.Lists.described[0].members = append(c.Lists.described[0].members, "bob@partner.test")
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, 6, 3)
	s := open(t, c, 1)[0]
	if _, err := s.Do(context.Background(), acts["one"]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time at all
	c.Drain(ctx)
	all := strings.Join(log, "\n")
	for _, want := range []string{"mail: lists: 1 list members are not users of this run (6 users), like bob@partner.test: mail to them is not tracked",
		"mail: the drain looked at 0 of 6 mailboxes after the load"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log lacks %q:\n%s", want, all)
		}
	}
	if ev.count(driver.Lost) != 1 {
		t.Errorf("%d lost, want the one message's 1", ev.count(driver.Lost))
	}
}
