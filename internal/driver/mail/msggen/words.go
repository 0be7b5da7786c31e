package msggen

import (
	"math"
	"strings"
)

// RNG is a small, fast deterministic random source (splitmix64), used
// where math/rand's indirection would dominate: text generation draws one
// number per word. The same seed gives the same numbers on every system;
// an RNG is not safe for concurrent use.
type RNG struct{ s uint64 }

// NewRNG is a source seeded with seed.
func NewRNG(seed uint64) *RNG { return &RNG{s: seed} }

// Next returns 64 uniform bits.
func (r *RNG) Next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	x := r.s
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Float returns a uniform number in [0, 1).
func (r *RNG) Float() float64 { return float64(r.Next()>>11) / (1 << 53) }

// Intn returns a uniform number in [0, n) (0 when n <= 1).
func (r *RNG) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(r.Next() % uint64(n))
}

// Norm returns a standard normal number (Box-Muller).
func (r *RNG) Norm() float64 {
	u1 := math.Max(r.Float(), 1e-300)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*r.Float())
}

// Mix hashes two values into one (seed derivation).
func Mix(a, b uint64) uint64 {
	r := RNG{s: a ^ (b * 0xd1342543de82ef95)}
	return r.Next()
}

// The vocabulary: common English words first, then pseudo-words built from
// syllables, drawn with a Zipf law, so that text compresses and indexes as
// natural text does (a few words very frequent, a long tail of rare ones).
const vocabSize = 8192

var common = strings.Fields(`the of and to a in is for that on with as it be this by are from at
we will you have not or your our please meeting report project team review
budget schedule update next week attached thanks regards customer order
plan draft version issue question office call today tomorrow monday friday
sales market quarter result number server network release test data policy`)

var syllables = strings.Fields(`ka lo mi ren to sa vel nor di pra que stan ber lin mon gar fel tis
ro va den cor mul tri pen sol har wen dak zir bo li an el um or ix est`)

var (
	vocab    [vocabSize]string
	zipfPick [1 << 16]uint16 // uniform 16 bits -> word rank
)

// Codenames are the search needles of the population (read only): every populated
// message names one project (header X-Throng-Tag and its body), chosen by
// its seed, so the expected hits of a search are known without reading
// the mailbox. No vocabulary word contains one.
var Codenames = [16]string{
	"quasarix", "zephyrum", "obsidiax", "tundraqo", "marlinox", "vortexal", "jadequin", "cobaltyx",
	"nimbusqa", "krakenil", "sequoyax", "pegasuzo", "orchidex", "basaltyq", "helionux", "fjordaxi",
}

func init() {
	n := copy(vocab[:], common)
	r := NewRNG(0x766f636162)
	seen := map[string]bool{}
	for _, w := range common {
		seen[w] = true
	}
	for n < vocabSize {
		k := 1 + r.Intn(3)
		var b strings.Builder
		for range k {
			b.WriteString(syllables[r.Intn(len(syllables))])
		}
		w := b.String()
		if seen[w] || containsCodename(w) {
			continue
		}
		seen[w] = true
		vocab[n] = w
		n++
	}
	// Zipf with exponent 1.05 over ranks, quantised to 65,536 slots.
	var total float64
	weights := make([]float64, vocabSize)
	for i := range weights {
		weights[i] = 1 / math.Pow(float64(i)+2.7, 1.05)
		total += weights[i]
	}
	acc, rank := 0.0, 0
	for slot := range zipfPick {
		target := (float64(slot) + 0.5) / float64(len(zipfPick)) * total
		for rank < vocabSize-1 && acc+weights[rank] < target {
			acc += weights[rank]
			rank++
		}
		zipfPick[slot] = uint16(rank)
	}
}

func containsCodename(w string) bool {
	for _, c := range Codenames {
		if strings.Contains(c, w) && len(w) > 3 || strings.Contains(w, c) {
			return true
		}
	}
	return false
}

// Word draws one word of the vocabulary (Zipf-distributed).
func (r *RNG) Word() string { return vocab[zipfPick[r.Next()&0xffff]] }

// generateText appends exactly n bytes of text drawn word by word, in
// sentences and paragraphs, lines of at most 76 characters ending in CRLF
// (the last line may be longer, padded so the length is exact). n below 3
// gives filler. It costs about 6 µs per KB: it builds the corpus that
// appendText copies from, not the messages themselves.
func generateText(b []byte, r *RNG, n int) []byte {
	end := len(b) + n
	if n < 3 {
		for len(b) < end {
			b = append(b, '.')
		}
		return b
	}
	start := len(b)
	col, sentence := 0, 0
	for end-len(b) > 84 {
		w := r.Word()
		if col > 0 && col+1+len(w) > 76 {
			b = append(b, '\r', '\n')
			col = 0
		}
		if col > 0 {
			b = append(b, ' ')
			col++
		}
		off := len(b)
		b = append(b, w...)
		if sentence == 0 && b[off] >= 'a' && b[off] <= 'z' {
			b[off] -= 'a' - 'A'
		}
		col += len(w)
		sentence++
		if sentence > 5+r.Intn(12) {
			b = append(b, '.')
			col++
			sentence = 0
			if r.Intn(6) == 0 {
				b = append(b, '\r', '\n', '\r', '\n')
				col = 0
			}
		}
	}
	switch left := end - len(b); {
	case left >= 2:
		for range left - 2 {
			b = append(b, '.')
		}
		b = append(b, '\r', '\n')
	case left == 1 && col > 0:
		b = append(b[:len(b)-1], '\r', '\n')
	case left == 1 && len(b)-start >= 2:
		b = append(b[:len(b)-2], '.', '\r', '\n')
	}
	return b
}
