package mail

import (
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// nopSink counts events without allocating.
type nopSink struct{ n [driver.NumClasses]int }

func (s *nopSink) Event(_ int, _ time.Time, _ time.Duration, _, _ int64, c driver.Class, _ error) {
	s.n[c]++
}

// trackerOf returns a tracker of n users with m messages, each owing a
// delivery to users 1..5, and the marks' header values.
func trackerOf(n, m int) (*tracker, *nopSink, [][]byte) {
	c := &Config{Settings: defaultSettings()}
	t := newTracker(c)
	c.track = t
	t.setUsers(n)
	sink := &nopSink{}
	var s driver.Sink = sink
	t.sink.Store(&s)
	g := t.current()
	var marks [][]byte
	for range m {
		seq, mark := g.newMark(time.Now())
		t.expect(g, seq, reach{users: []int{1, 2, 3, 4, 5}})
		g.accepted(seq, time.Now())
		marks = append(marks, []byte(mark))
	}
	return t, sink, marks
}

// A delivery (the hot path: every message, every recipient) allocates
// nothing; a copy seen again is not counted again.
func TestSeenDoesNotAllocate(t *testing.T) {
	tr, sink, marks := trackerOf(8, 1000)
	k := 0 // delivery k: message k/5 to user 1+k%5, UID k+1
	allocs := testing.AllocsPerRun(1000, func() {
		tr.seen(1+k%5, marks[k/5], copyAt(7, uint32(k+1)), time.Now(), nil)
		k++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per delivery", allocs)
	}
	if sink.n[driver.OK] != k {
		t.Errorf("%d deliveries of %d", sink.n[driver.OK], k)
	}
	tr.seen(1, marks[0], copyAt(7, 1), time.Now(), nil) // user0002's first copy, again
	if sink.n[driver.OK] != k || sink.n[driver.Duplicate] != 0 {
		t.Errorf("a copy seen again counted: %v", sink.n)
	}
	tr.seen(1, marks[0], copyAt(7, 99999), time.Now(), nil) // another copy
	tr.seen(1, marks[0], copyAt(7, 99999), time.Now(), nil) // the same, again
	if sink.n[driver.Duplicate] != 1 {
		t.Errorf("a second copy: %v", sink.n)
	}
}

// BenchmarkTrackMessage is the memory a message to five users keeps for
// the repetition (B/op) and the cost of tracking it.
func BenchmarkTrackMessage(b *testing.B) {
	c := &Config{Settings: defaultSettings()}
	t := newTracker(c)
	t.setUsers(8)
	g := t.current()
	r := reach{users: []int{1, 2, 3, 4, 5}}
	b.ReportAllocs()
	for b.Loop() {
		seq, _ := g.newMark(time.Now())
		t.expect(g, seq, r)
	}
}
