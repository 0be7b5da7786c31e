package rawsock

import (
	"slices"
	"testing"
)

// A freed slot is taken again (the table does not grow with turnover), but
// under a new generation: the old token is stale whatever the slot holds
// now, so an event of a closed socket never reaches the slot's next owner.
// All yields the slots in use, and its body may free them.
func TestSlots(t *testing.T) {
	var s Slots[string]
	a := s.Put("a")
	b := s.Put("b")
	if v, ok := s.Get(a); !ok || v != "a" {
		t.Fatalf("Get(a) = %q, %v", v, ok)
	}
	if !s.Free(a) || s.Free(a) {
		t.Fatal("Free: a first time true, a second false")
	}
	if _, ok := s.Get(a); ok {
		t.Error("a freed slot's token still resolves")
	}
	c := s.Put("c")
	if c.Slot != a.Slot || c.Gen == a.Gen {
		t.Errorf("reuse: %v after %v; want the same slot, a new generation", c, a)
	}
	if _, ok := s.Get(a); ok {
		t.Error("a stale token resolves to the slot's next owner")
	}
	for range 1000 {
		s.Free(s.Put("x"))
	}
	if len(s.items) != 3 || s.Len() != 2 {
		t.Errorf("after 1000 puts and frees: %d slots, %d in use; want 3 and 2", len(s.items), s.Len())
	}
	for _, bad := range []Token{{Slot: -1}, {Slot: 99}} {
		if _, ok := s.Get(bad); ok || s.Free(bad) {
			t.Errorf("token %v resolves", bad)
		}
	}
	var seen []string
	for tok, v := range s.All() {
		seen = append(seen, v)
		s.Free(tok)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"b", "c"}) || s.Len() != 0 {
		t.Errorf("All yielded %v and left %d in use; want [b c], 0", seen, s.Len())
	}
	if _, ok := s.Get(b); ok {
		t.Error("freed during All, b still resolves")
	}
}
