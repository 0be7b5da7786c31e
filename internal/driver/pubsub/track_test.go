package pubsub

import (
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	p := fillPayload(100, 7)
	putSeqTime(p, 42, 1_700_000_000_123_456_789)
	h, ok := parseHeader(p)
	if !ok || h != (header{stream: 7, seq: 42, sent: 1_700_000_000_123_456_789}) {
		t.Fatalf("parseHeader = %+v, %v", h, ok)
	}
	for _, bad := range [][]byte{p[:HeaderSize-1], append([]byte("xhr1"), p[4:]...), nil} {
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
			tr := newTrack(0, tt.base)
			for _, s := range tt.seqs {
				tr.add(s)
			}
			last := tt.last
			if tt.closedAt > 0 {
				tr.end, tr.closed = tt.closedAt, true
				last = tr.end
			}
			if got := tr.settle(last); got != tt.want {
				t.Errorf("settle(%d) after %v = %+v, want %+v", last, short(tt.seqs), got, tt.want)
			}
		})
	}
}

func TestTrackArrivals(t *testing.T) {
	tr := newTrack(0, 2)
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
		tr := newTrack(0, 0)
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
