package scenario

import (
	"testing"
	"time"
)

// A staged ramp whose group holds all the users (a preset scaled down by
// --users) is one group: valid, its pause never comes.
func TestStagedRampOfOneGroup(t *testing.T) {
	s, err := Parse("one.yaml", []byte("users: 60\nclosed: {iterations: 1}\nphases: {ramp_up: {every: 1s, group: 1000, pause: 13m}}\nactions: [{path: /}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := RampLength(s.Phases.RampUp, s.Users); got != 60*time.Second {
		t.Errorf("ramp of 60 users in one group: %v, want 1m0s", got)
	}
}
