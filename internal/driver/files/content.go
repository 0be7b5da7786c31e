package files

import "encoding/binary"

// The content of every file throng writes is a pure function of a 64-bit
// key (derived from the scenario's seed, the user for per-user populations,
// and the file's index) and the offset: word k (bytes 8k..8k+7, little
// endian) is mix(key + (k+1)·γ), SplitMix64's output function. So any range
// of any file can be generated or checked on its own, without reading the
// rest, without storing checksums, and the same on every machine: a copy is
// verified by comparing every byte read with what was written, at about
// 4 GB/s per core.

const gamma = 0x9E3779B97F4A7C15

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// contentKey is the key of file index of a population (user is -1 for a
// shared population) or, with kind uploadKind, of upload n of a user.
func contentKey(seed uint64, kind uint64, user, index int) uint64 {
	k := mix(seed ^ kind*gamma)
	k = mix(k ^ uint64(int64(user))*0xD1B54A32D192ED03)
	return mix(k ^ uint64(index)*0xA24BAED4963EE407)
}

const (
	populationKind uint64 = 1
	uploadKind     uint64 = 2
	sizeKind       uint64 = 3
)

// fill writes the content of the file with key at offset off into p.
func fill(key uint64, off int64, p []byte) {
	k := uint64(off) / 8
	skip := int(off % 8)
	var w [8]byte
	if skip != 0 {
		binary.LittleEndian.PutUint64(w[:], mix(key+(k+1)*gamma))
		n := copy(p, w[skip:])
		p = p[n:]
		k++
	}
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, mix(key+(k+1)*gamma))
		p = p[8:]
		k++
	}
	if len(p) > 0 {
		binary.LittleEndian.PutUint64(w[:], mix(key+(k+1)*gamma))
		copy(p, w[:])
	}
}

// mismatch returns the offset (relative to p) of the first byte of p that
// differs from the content of the file with key at offset off, or -1 when
// p is exactly that content.
func mismatch(key uint64, off int64, p []byte) int {
	k := uint64(off) / 8
	skip := int(off % 8)
	i := 0
	var w [8]byte
	if skip != 0 {
		binary.LittleEndian.PutUint64(w[:], mix(key+(k+1)*gamma))
		for j := skip; j < 8 && i < len(p); j++ {
			if p[i] != w[j] {
				return i
			}
			i++
		}
		k++
	}
	for ; len(p)-i >= 8; i += 8 {
		if binary.LittleEndian.Uint64(p[i:]) != mix(key+(k+1)*gamma) {
			for j := range 8 {
				binary.LittleEndian.PutUint64(w[:], mix(key+(k+1)*gamma))
				if p[i+j] != w[j] {
					return i + j
				}
			}
		}
		k++
	}
	if i < len(p) {
		binary.LittleEndian.PutUint64(w[:], mix(key+(k+1)*gamma))
		for j := 0; i < len(p); j++ {
			if p[i] != w[j] {
				return i
			}
			i++
		}
	}
	return -1
}
