package files

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/scenario"
)

// Size distributions of a population.
const (
	Fixed       = "fixed"
	Uniform     = "uniform"
	Exponential = "exponential"
)

// layout says where a population's files are and what they hold. It is a
// pure function of the scenario's population block and seed: every process
// (and every repetition) computes the same names, sizes and content.
//
// A shared population (per_user: false) is one set of files; user k of U
// works on files k, k+U, k+2U, ... so that U users never touch the same
// file. A per-user population gives every user its own directory uNNNN
// holding its own files (and its own content).
//
// Files go into the leaves of a tree of depth levels of width directories
// each (none when depth is 0): file i goes to leaf i mod width^depth. Names:
// [uNNNN/]dNN/.../fNNNNNNNN.bin.
type layout struct {
	seed     uint64
	files    int
	perUser  bool
	depth    int
	width    int
	leaves   int
	dist     string
	size     int64 // fixed size, or the mean (exponential)
	min, max int64
	dirW     int // digits of a directory name
}

func newLayout(seed uint64, p *Population) *layout {
	l := &layout{
		seed: seed, files: p.Files, perUser: p.PerUser, depth: p.Tree.Depth, width: p.Tree.Width,
		dist: p.Distribution, size: int64(p.Size), min: int64(p.Min), max: int64(p.Max), leaves: 1,
	}
	if l.depth > 0 {
		l.leaves = int(math.Pow(float64(l.width), float64(l.depth)))
		l.dirW = max(2, len(strconv.Itoa(l.width-1)))
	}
	return l
}

// userDir is the directory of user u's files ("" for a shared population).
func (l *layout) userDir(u int) string {
	if !l.perUser {
		return ""
	}
	return fmt.Sprintf("u%04d", u)
}

// file is the path of file i of user u, relative to the root.
func (l *layout) file(u, i int) string {
	var b strings.Builder
	if d := l.userDir(u); d != "" {
		b.WriteString(d)
		b.WriteByte('/')
	}
	l.leafPath(&b, i%l.leaves)
	fmt.Fprintf(&b, "f%08d.bin", i)
	return b.String()
}

// leafPath writes the directories of leaf n, each followed by a slash.
func (l *layout) leafPath(b *strings.Builder, n int) {
	div := l.leaves
	for range l.depth {
		div /= l.width
		fmt.Fprintf(b, "d%0*d/", l.dirW, (n/div)%l.width)
	}
}

// numDirs is the number of directories of one population tree, its top
// directory included: 1 + W + W² + ... + W^depth.
func (l *layout) numDirs() int {
	n, level := 1, 1
	for range l.depth {
		level *= l.width
		n += level
	}
	return n
}

// dir is directory j (0 <= j < numDirs) of user u's tree, breadth first:
// 0 is the top ("" or "uNNNN"), then the first level, and so on.
func (l *layout) dir(u, j int) string {
	base := l.userDir(u)
	level, count := 0, 1
	for j >= count {
		j -= count
		level++
		count *= l.width
	}
	var b strings.Builder
	div := count
	for range level {
		div /= l.width
		fmt.Fprintf(&b, "d%0*d/", l.dirW, (j/div)%l.width)
	}
	return path.Join(base, strings.TrimSuffix(b.String(), "/"))
}

// leafDirs lists the directories that hold files, for user u.
func (l *layout) leafDirs(u int) []string {
	out := make([]string, 0, l.leaves)
	for n := range l.leaves {
		var b strings.Builder
		l.leafPath(&b, n)
		out = append(out, path.Join(l.userDir(u), strings.TrimSuffix(b.String(), "/")))
	}
	return out
}

// key is the content key of file i of user u.
func (l *layout) key(u, i int) uint64 {
	if !l.perUser {
		u = -1
	}
	return contentKey(l.seed, populationKind, u, i)
}

// sizeOf is the size of file i of user u.
func (l *layout) sizeOf(u, i int) int64 {
	if l.dist == Fixed || l.dist == "" {
		return l.size
	}
	if !l.perUser {
		u = -1
	}
	r := contentKey(l.seed, sizeKind, u, i)
	switch l.dist {
	case Uniform:
		return l.min + int64(r%uint64(l.max-l.min+1))
	case Exponential:
		// Inverse transform of a uniform in (0, 1), clamped to [min, max].
		x := (float64(r>>11) + 0.5) / (1 << 53)
		s := int64(math.Round(-float64(l.size) * math.Log(x)))
		lo, hi := l.min, l.max
		if hi == 0 {
			hi = math.MaxInt64
		}
		return min(max(s, lo), hi)
	}
	return l.size
}

// maxSize is the largest size a file of this population can have.
func (l *layout) maxSize() int64 {
	switch l.dist {
	case Uniform:
		return l.max
	case Exponential:
		if l.max > 0 {
			return l.max
		}
		// Unbounded: 40 means cover all but e^-40 of the draws; a larger
		// file is read in pieces anyway.
		return 40 * l.size
	}
	return l.size
}

// slice is the number of files user u of users owns in a shared
// population: the i < files with i mod users == u.
func (l *layout) slice(u, users int) int {
	if l.perUser {
		return l.files
	}
	if u >= l.files {
		return 0
	}
	return (l.files - u + users - 1) / users
}

// index is the population index of the j-th file of user u's slice (j may
// exceed the slice: the sequence wraps around the population).
func (l *layout) index(u, users, j int) int {
	if l.perUser {
		return j % l.files
	}
	return int((int64(u) + int64(j)*int64(users)) % int64(l.files))
}

// marker is what the population's marker file records: a population that
// matches it is reused as is (after a listing check).
type marker struct {
	Throng       int    `json:"throng_population"`
	Seed         uint64 `json:"seed"`
	Files        int    `json:"files"`
	PerUser      bool   `json:"per_user"`
	Depth        int    `json:"depth"`
	Width        int    `json:"width"`
	Distribution string `json:"distribution"`
	Size         int64  `json:"size"`
	Min          int64  `json:"min"`
	Max          int64  `json:"max"`
	// Complete is false while Prepare writes the files.
	Complete bool `json:"complete"`
}

// same reports whether m and o describe the same files.
func (m marker) same(o marker) bool {
	m.Complete, o.Complete = false, false
	return m == o
}

// markerVersion changes when the names or the content of a population
// change, so that an old population is never taken for a new one.
const markerVersion = 1

func (l *layout) marker() marker {
	return marker{Throng: markerVersion, Seed: l.seed, Files: l.files, PerUser: l.perUser, Depth: l.depth, Width: l.width,
		Distribution: l.dist, Size: l.size, Min: l.min, Max: l.max}
}

func (m marker) layout() *layout {
	return newLayout(m.Seed, &Population{Files: m.Files, PerUser: m.PerUser, Tree: Tree{Depth: m.Depth, Width: m.Width},
		Distribution: m.Distribution, Size: scenario.Size(m.Size), Min: scenario.Size(m.Min), Max: scenario.Size(m.Max)})
}
