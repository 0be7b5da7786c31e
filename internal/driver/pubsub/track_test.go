package pubsub

import (
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	key := keyOf(3000, 4)
	p := fillPayload(100, 0xfeedbeef, key)
	putSeqTime(p, 42, 1_700_000_000_123_456_789)
	h, ok := parseHeader(p)
	if !ok || h != (header{run: 0xfeedbeef, pub: 3000, subject: 4, seq: 42, sent: 1_700_000_000_123_456_789}) || h.key() != key {
		t.Fatalf("parseHeader = %+v, %v", h, ok)
	}
	if key.user() != 3000 || key.subject() != 4 {
		t.Errorf("key %x: user %d subject %d", key, key.user(), key.subject())
	}
	first, again := runTag("a1b2", 0), runTag("a1b2", 0) // computed twice: it is a pure function
	if first != again || first == runTag("a1b2", 1) || first == runTag("a1b3", 0) {
		t.Error("run tags: the same run and repetition must agree, others differ")
	}
	for _, bad := range [][]byte{p[:HeaderSize-1], append([]byte("xhr2"), p[4:]...), nil} {
		if _, ok := parseHeader(bad); ok {
			t.Errorf("parseHeader(%q...) accepted", bad[:min(len(bad), 8)])
		}
	}
}

// TestTrack feeds sequences of arrivals and checks the settled tally:
// every message counted exactly once as received, lost, duplicated, out of
// order or early.
func TestTrack(t *testing.T) {
	tests := []struct {
		name     string
		base     uint64
		seqs     []uint64
		last     uint64
		closedAt uint64 // when > 0: the subscription ended there
		want     tally
	}{
		{"in order", 0, []uint64{1, 2, 3, 4, 5}, 5, 0, tally{Expected: 5, Received: 5}},
		{"tail not arrived", 0, []uint64{1, 2, 3}, 5, 0, tally{Expected: 5, Received: 3, Lost: 2}},
		{"gap", 0, []uint64{1, 2, 4, 5}, 5, 0, tally{Expected: 5, Received: 4, Lost: 1}},
		{"gap filled late", 0, []uint64{1, 2, 4, 5, 3}, 5, 0, tally{Expected: 5, Received: 5, OutOfOrder: 1}},
		{"duplicates", 0, []uint64{1, 1, 2, 3, 3, 3}, 3, 0, tally{Expected: 3, Received: 3, Duplicate: 3}},
		{"duplicate of a late one", 0, []uint64{2, 1, 1}, 2, 0, tally{Expected: 2, Received: 2, OutOfOrder: 1, Duplicate: 1}},
		{"early before base", 10, []uint64{9, 10, 11, 12}, 12, 0, tally{Expected: 2, Received: 2, Early: 2}},
		{"nothing arrived", 3, nil, 8, 0, tally{Expected: 5, Lost: 5}},
		{"nothing published", 0, nil, 0, 0, tally{}},
		{"first lost", 0, []uint64{2, 3}, 3, 0, tally{Expected: 3, Received: 2, Lost: 1}},
		{"window edge", 0, append(seq(1, 300), 45), 300, 0, tally{Expected: 300, Received: 300, Duplicate: 1}},
		{"beyond the window", 0, append(seq(2, 400), 1), 400, 0, tally{Expected: 400, Received: 400, OutOfOrder: 1}},
		{"beyond the window, copy", 0, append(seq(1, 400), 1), 400, 0, tally{Expected: 400, Received: 400, OutOfOrder: 1, Duplicate: 1}},
		{"jump over 64", 0, []uint64{1, 70, 3, 69}, 70, 0, tally{Expected: 70, Received: 4, Lost: 66, OutOfOrder: 2}},
		{"jump over 200 then back", 0, []uint64{1, 250, 2, 249, 250}, 250, 0, tally{Expected: 250, Received: 4, Lost: 246, OutOfOrder: 2, Duplicate: 1}},
		{"closed early", 0, []uint64{1, 2}, 9, 4, tally{Expected: 4, Received: 2, Lost: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTrack(&stream{}, tt.base)
			for _, s := range tt.seqs {
				tr.add(s)
			}
			last := tt.last
			if tt.closedAt > 0 {
				tr.finish(tt.closedAt)
			}
			if got := tr.settle(last, nil); got != tt.want {
				t.Errorf("settle(%d) after %v = %+v, want %+v", last, short(tt.seqs), got, tt.want)
			}
		})
	}
}

func TestTrackArrivals(t *testing.T) {
	tr := newTrack(&stream{}, 2)
	for _, c := range []struct {
		seq  uint64
		want arrival
	}{{1, early}, {3, inOrder}, {5, inOrder}, {4, late}, {4, duplicate}, {5, duplicate}, {6, inOrder}} {
		if got := tr.add(c.seq); got != c.want {
			t.Errorf("add(%d) = %d, want %d", c.seq, got, c.want)
		}
	}
}

// TestTrackShift checks the window after jumps of every size against a
// simple set.
func TestTrackShift(t *testing.T) {
	for jump := uint64(1); jump <= window+2; jump++ {
		tr := newTrack(&stream{}, 0)
		seen := map[uint64]bool{}
		var s uint64
		for i := 0; i < 6; i++ {
			s += jump
			tr.add(s)
			seen[s] = true
		}
		for q := s; q > 0 && s-q < window; q-- {
			want := duplicate
			if !seen[q] {
				want = late
			}
			c := tr // a copy: probe without changing tr
			if got := c.add(q); got != want {
				t.Fatalf("jump %d: add(%d) after %d = %d, want %d", jump, q, s, got, want)
			}
		}
	}
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func short(s []uint64) []uint64 {
	if len(s) > 12 {
		return append(append([]uint64{}, s[:6]...), s[len(s)-6:]...)
	}
	return s
}

// TestTrackOutageGaps: a track owes every number through a broken
// connection. What never arrived after the last number received before
// the break and before the first received after it is missed while
// disconnected (each part to its outage); what never arrived otherwise was
// lost while connected. Each case's truth is counted by hand.
func TestTrackOutageGaps(t *testing.T) {
	type step struct {
		seqs   []uint64
		break_ int32 // >= 0: the connection breaks in this outage, after seqs
	}
	tests := []struct {
		name    string
		steps   []step
		last    uint64
		want    tally
		outages map[int32]uint64
	}{
		{"nothing missed", []step{{seq(1, 10), 0}, {seq(11, 20), -1}}, 20,
			tally{Expected: 20, Received: 20}, nil},
		{"missed while away", []step{{seq(1, 10), 0}, {seq(16, 20), -1}}, 20,
			tally{Expected: 20, Received: 15, Lost: 5, Missed: 5}, map[int32]uint64{0: 5}},
		{"lost while connected, then missed", []step{{[]uint64{1, 2, 4, 5}, 0}, {seq(9, 12), -1}}, 12,
			tally{Expected: 12, Received: 8, Lost: 4, Missed: 3}, map[int32]uint64{0: 3}},
		{"never came back", []step{{seq(1, 10), 1}}, 25,
			tally{Expected: 25, Received: 10, Lost: 15, Missed: 15}, map[int32]uint64{1: 15}},
		{"two outages", []step{{seq(1, 5), 0}, {seq(8, 10), 1}, {seq(14, 15), -1}}, 15,
			tally{Expected: 15, Received: 10, Lost: 5, Missed: 5}, map[int32]uint64{0: 2, 1: 3}},
		{"a second break before anything came back", []step{{seq(1, 5), 0}, {nil, 1}, {seq(9, 10), -1}}, 10,
			tally{Expected: 10, Received: 7, Lost: 3, Missed: 3}, map[int32]uint64{0: 3}},
		{"kept by the broker, late", []step{{seq(1, 5), 0}, {[]uint64{9, 6, 7, 8, 10}, -1}}, 10,
			tally{Expected: 10, Received: 10, OutOfOrder: 3}, nil},
		{"kept in part", []step{{seq(1, 5), 0}, {[]uint64{9, 6, 10}, -1}}, 10,
			tally{Expected: 10, Received: 8, Lost: 2, Missed: 2, OutOfOrder: 1}, map[int32]uint64{0: 2}},
		{"lost after the return", []step{{seq(1, 5), 0}, {[]uint64{8, 10}, -1}}, 12,
			tally{Expected: 12, Received: 7, Lost: 5, Missed: 2}, map[int32]uint64{0: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTrack(&stream{}, 0)
			for _, st := range tt.steps {
				for _, s := range st.seqs {
					tr.add(s)
				}
				if st.break_ >= 0 {
					tr.openGap(st.break_)
				}
			}
			got := map[int32]uint64{}
			tl := tr.settle(tt.last, func(o int32, n uint64) { got[o] += n })
			if tl != tt.want {
				t.Errorf("settle = %+v, want %+v", tl, tt.want)
			}
			if len(got) != len(tt.outages) {
				t.Errorf("missed by outage %v, want %v", got, tt.outages)
			}
			for o, n := range tt.outages {
				if got[o] != n {
					t.Errorf("missed by outage %v, want %v", got, tt.outages)
				}
			}
		})
	}
}

// TestTrackLeave: a user that leaves is owed up to the highest number it
// received (what was in flight was not owed); one that leaves while its
// connection is broken is owed up to the count when it left, missed while
// disconnected.
func TestTrackLeave(t *testing.T) {
	tr := newTrack(&stream{}, 0)
	for _, s := range []uint64{1, 2, 4, 5} {
		tr.add(s)
	}
	tr.finish(tr.hi)
	if got, want := tr.settle(50, nil), (tally{Expected: 5, Received: 4, Lost: 1}); got != want {
		t.Errorf("left connected: %+v, want %+v", got, want)
	}
	tr = newTrack(&stream{}, 0)
	for _, s := range seq(1, 5) {
		tr.add(s)
	}
	tr.openGap(0)
	tr.finish(12) // the stream's count when the user left, away
	if got, want := tr.settle(50, nil), (tally{Expected: 12, Received: 5, Lost: 7, Missed: 7}); got != want {
		t.Errorf("left while broken: %+v, want %+v", got, want)
	}
}

// TestTrackPendingBase: a stream of another process whose count at the
// subscription is not known yet. Arrivals meanwhile are kept; when the
// count comes, arrivals all above it stand, and arrivals at or below it
// make every arrival so far early and the base the highest of them.
func TestTrackPendingBase(t *testing.T) {
	tests := []struct {
		name             string
		seqs             []uint64
		base             uint64
		after            []uint64
		last             uint64
		want             tally
		delivered, early uint64
	}{
		{"nothing arrived", nil, 7, seq(8, 10), 12, tally{Expected: 5, Received: 3, Lost: 2}, 0, 0},
		{"all above", []uint64{9, 10}, 7, seq(11, 12), 12, tally{Expected: 5, Received: 4, Lost: 1}, 2, 0},
		{"stream began later", []uint64{1, 2, 4}, 0, seq(5, 6), 8, tally{Expected: 8, Received: 5, Lost: 3}, 3, 0},
		{"some at or below", []uint64{6, 7, 8}, 7, seq(9, 10), 10, tally{Expected: 2, Received: 2, Early: 3}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTrack(&stream{}, 0)
			tr.pending = true
			for _, s := range tt.seqs {
				tr.add(s)
			}
			d, e := tr.settleBase(tt.base)
			for _, s := range tt.after {
				tr.add(s)
			}
			if got := tr.settle(tt.last, nil); got != tt.want || d != tt.delivered || e != tt.early {
				t.Errorf("settle = %+v (moved %d delivered, %d early), want %+v (%d, %d)", got, d, e, tt.want, tt.delivered, tt.early)
			}
		})
	}
	tr := newTrack(&stream{}, 0)
	tr.pending = true
	tr.add(3)
	if got := tr.settle(9, nil); got != (tally{Unresolved: 1}) {
		t.Errorf("never resolved: %+v, want the arrival unresolved and nothing owed", got)
	}
}
