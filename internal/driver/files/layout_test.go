package files

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestContent(t *testing.T) {
	t.Parallel()
	key := contentKey(1, populationKind, -1, 7)
	whole := make([]byte, 20488)
	fill(key, 0, whole)
	again := make([]byte, len(whole))
	fill(key, 0, again)
	if !bytes.Equal(whole, again) {
		t.Fatal("fill is not deterministic")
	}
	// Any range is the same as that range of the whole file.
	for _, r := range [][2]int{{0, 1}, {3, 5}, {7, 9}, {8, 16}, {13, 13 + 4096}, {20480, 20488}, {20487, 20488}} {
		p := make([]byte, r[1]-r[0])
		fill(key, int64(r[0]), p)
		if !bytes.Equal(p, whole[r[0]:r[1]]) {
			t.Errorf("fill at %d..%d differs from the whole file's", r[0], r[1])
		}
		if k := mismatch(key, int64(r[0]), whole[r[0]:r[1]]); k != -1 {
			t.Errorf("mismatch(%d..%d) = %d on the right content", r[0], r[1], k)
		}
	}
	// The first differing byte is found wherever it is.
	for _, at := range []int{0, 1, 7, 8, 100, 20480, 20487} {
		p := slices.Clone(whole)
		p[at] ^= 0x40
		if k := mismatch(key, 0, p); k != at {
			t.Errorf("byte %d flipped: mismatch = %d", at, k)
		}
		if k := mismatch(key, 5, p[5:]); at >= 5 && k != at-5 {
			t.Errorf("byte %d flipped, checked from 5: mismatch = %d", at, k)
		}
	}
	// Different files, users, seeds and kinds have different content.
	keys := map[uint64]string{}
	for _, k := range []struct {
		seed       uint64
		kind       uint64
		user, file int
	}{{1, populationKind, -1, 7}, {1, populationKind, -1, 8}, {2, populationKind, -1, 7}, {1, populationKind, 0, 7}, {1, uploadKind, -1, 7}} {
		key := contentKey(k.seed, k.kind, k.user, k.file)
		if prev, dup := keys[key]; dup {
			t.Errorf("%+v has the key of %s", k, prev)
		}
		keys[key] = fmt.Sprint(k)
	}
	other := make([]byte, 64)
	fill(contentKey(1, populationKind, -1, 8), 0, other)
	if bytes.Equal(other, whole[:64]) {
		t.Error("files 7 and 8 start alike")
	}
}

func TestLayoutNames(t *testing.T) {
	t.Parallel()
	flat := newLayout(1, &Population{Files: 50000, Size: 20488, Distribution: Fixed})
	if got := flat.file(0, 49999); got != "f00049999.bin" {
		t.Errorf("flat file = %q", got)
	}
	if flat.numDirs() != 1 || flat.dir(0, 0) != "" || !slices.Equal(flat.leafDirs(0), []string{""}) {
		t.Errorf("flat dirs %d %q %q", flat.numDirs(), flat.dir(0, 0), flat.leafDirs(0))
	}
	tree := newLayout(1, &Population{Files: 100, Size: 1, Distribution: Fixed, Tree: Tree{Depth: 2, Width: 3}, PerUser: true})
	if got := tree.file(12, 5); got != "u0012/d01/d02/f00000005.bin" {
		t.Errorf("tree file = %q", got) // leaf 5 of 9 = (1, 2)
	}
	var dirs []string
	for j := range tree.numDirs() {
		dirs = append(dirs, tree.dir(3, j))
	}
	want := []string{"u0003", "u0003/d00", "u0003/d01", "u0003/d02",
		"u0003/d00/d00", "u0003/d00/d01", "u0003/d00/d02", "u0003/d01/d00", "u0003/d01/d01", "u0003/d01/d02",
		"u0003/d02/d00", "u0003/d02/d01", "u0003/d02/d02"}
	if !slices.Equal(dirs, want) {
		t.Errorf("dirs %q", dirs)
	}
	if leaves := tree.leafDirs(3); !slices.Equal(leaves, want[4:]) {
		t.Errorf("leaves %q", leaves)
	}
	wide := newLayout(1, &Population{Files: 10, Tree: Tree{Depth: 1, Width: 150}, Distribution: Fixed})
	if got := wide.file(0, 149); got != "d149/f00000149.bin" || wide.dir(0, 1) != "d000" {
		t.Errorf("wide: %q %q", got, wide.dir(0, 1))
	}
}

// Users of a shared population work on disjoint files that together cover
// it; their sequences wrap around.
func TestLayoutSlices(t *testing.T) {
	t.Parallel()
	l := newLayout(1, &Population{Files: 10, Size: 1, Distribution: Fixed})
	const users = 3
	seen := map[int]int{}
	total := 0
	for u := range users {
		n := l.slice(u, users)
		total += n
		for j := range n {
			i := l.index(u, users, j)
			if prev, dup := seen[i]; dup {
				t.Errorf("file %d is user %d's and user %d's", i, prev, u)
			}
			seen[i] = u
		}
	}
	if total != 10 || len(seen) != 10 {
		t.Errorf("slices cover %d files (%d distinct), want 10", total, len(seen))
	}
	// User 1 of 3: 1, 4, 7, then on around the population.
	var got []int
	for j := range 5 {
		got = append(got, l.index(1, users, j))
	}
	if !slices.Equal(got, []int{1, 4, 7, 0, 3}) {
		t.Errorf("user 1's sequence %v", got)
	}
	// More users than files: some have no slice of their own.
	if l.slice(11, 12) != 0 || l.index(11, 12, 0) != 1 {
		t.Errorf("user 11 of 12: slice %d index %d", l.slice(11, 12), l.index(11, 12, 0))
	}
	pu := newLayout(1, &Population{Files: 4, Size: 1, Distribution: Fixed, PerUser: true})
	if pu.slice(9, 10) != 4 || pu.index(9, 10, 6) != 2 {
		t.Errorf("per user: slice %d index %d", pu.slice(9, 10), pu.index(9, 10, 6))
	}
}

func TestLayoutSizes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p        Population
		min, max int64
		mean     float64
	}{
		{Population{Files: 2000, Size: 20488, Distribution: Fixed}, 20488, 20488, 20488},
		{Population{Files: 2000, Distribution: Uniform, Min: 1000, Max: 3000}, 1000, 3000, 2000},
		{Population{Files: 2000, Distribution: Exponential, Size: 10000, Max: 200000}, 0, 200000, 10000},
		{Population{Files: 2000, Distribution: Exponential, Size: 10000, Min: 500, Max: 30000}, 500, 30000, 0},
	} {
		l := newLayout(42, &tt.p)
		var sum float64
		lo, hi := int64(math.MaxInt64), int64(0)
		for i := range tt.p.Files {
			s := l.sizeOf(-1, i)
			if s != l.sizeOf(-1, i) {
				t.Fatalf("%+v: size of %d changes", tt.p, i)
			}
			sum += float64(s)
			lo, hi = min(lo, s), max(hi, s)
		}
		mean := sum / float64(tt.p.Files)
		if lo < tt.min || hi > tt.max || hi > l.maxSize() {
			t.Errorf("%+v: sizes %d..%d, want within %d..%d (maxSize %d)", tt.p, lo, hi, tt.min, tt.max, l.maxSize())
		}
		if tt.mean > 0 && math.Abs(mean-tt.mean)/tt.mean > 0.06 {
			t.Errorf("%+v: mean size %.0f, want about %.0f", tt.p, mean, tt.mean)
		}
		if tt.p.Distribution != Fixed && lo == hi {
			t.Errorf("%+v: every file has %d bytes", tt.p, lo)
		}
	}
	// The same seed gives the same sizes; another seed other sizes.
	a := newLayout(1, &Population{Files: 100, Distribution: Uniform, Min: 1, Max: 1 << 20})
	b := newLayout(2, &Population{Files: 100, Distribution: Uniform, Min: 1, Max: 1 << 20})
	same := 0
	for i := range 100 {
		if a.sizeOf(-1, i) == b.sizeOf(-1, i) {
			same++
		}
	}
	if same > 2 {
		t.Errorf("%d of 100 sizes equal across seeds", same)
	}
}
