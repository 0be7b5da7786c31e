package rawsock

import "iter"

// Token names a socket registered in an event loop: the slot of what owns
// it (a transaction, a connection) and the generation of that slot. It is
// the data an epoll event (or an io_uring completion) carries back. When a
// socket is closed its slot's generation changes, so an event of the old
// socket still queued in the kernel or in the batch being handled no longer
// matches, whatever the slot holds by then, even the same descriptor
// number reused.
type Token struct {
	Slot int32
	Gen  uint32
}

// Slots is a table of owners under tokens for a loop that takes them in
// and lets them go as it runs: a freed slot is reused, with a new
// generation. Its methods are not safe for concurrent use; a loop that
// registers from other goroutines guards it with its own lock.
type Slots[T any] struct {
	items []T
	gens  []uint32
	used  []bool
	free  []int32
	n     int
}

// Put stores v in a free slot and returns its token.
func (s *Slots[T]) Put(v T) Token {
	var i int32
	if k := len(s.free); k > 0 {
		i, s.free = s.free[k-1], s.free[:k-1]
	} else {
		i = int32(len(s.items))
		var zero T
		s.items, s.gens, s.used = append(s.items, zero), append(s.gens, 0), append(s.used, false)
	}
	s.items[i], s.used[i] = v, true
	s.n++
	return Token{Slot: i, Gen: s.gens[i]}
}

// Get returns what t names, and false when t is stale (its slot was freed
// since, and perhaps taken again) or was never given.
func (s *Slots[T]) Get(t Token) (T, bool) {
	if t.Slot < 0 || int(t.Slot) >= len(s.items) || !s.used[t.Slot] || s.gens[t.Slot] != t.Gen {
		var zero T
		return zero, false
	}
	return s.items[t.Slot], true
}

// Free empties t's slot and gives it a new generation; false when t was
// stale already.
func (s *Slots[T]) Free(t Token) bool {
	if _, ok := s.Get(t); !ok {
		return false
	}
	var zero T
	s.items[t.Slot], s.used[t.Slot] = zero, false
	s.gens[t.Slot]++
	s.free = append(s.free, t.Slot)
	s.n--
	return true
}

// Len is the number of slots in use.
func (s *Slots[T]) Len() int { return s.n }

// All yields the slots in use; the body may free the slot it is given.
func (s *Slots[T]) All() iter.Seq2[Token, T] {
	return func(yield func(Token, T) bool) {
		for i := range s.items {
			if s.used[i] && !yield(Token{Slot: int32(i), Gen: s.gens[i]}, s.items[i]) {
				return
			}
		}
	}
}
