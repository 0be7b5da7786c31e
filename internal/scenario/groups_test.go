package scenario

import (
	"strings"
	"testing"
	"time"
)

const grouped = `
phases: {steady: 1m}
groups:
  - name: subscribers
    users: 3000
    ramp_up: {every: 5ms}
  - name: publishers
    users: 5
    start: 15s
    model: open
    actions:
      - {name: publish, rate: 35/s, subject: "bench.{user}"}
`

func TestGroupsDecode(t *testing.T) {
	s, err := Parse("g.yaml", []byte(grouped), drivers)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Grouped() || s.Users != 3005 || len(s.Actions) != 1 || s.Actions[0].Group != "publishers" {
		t.Fatalf("users %d actions %+v", s.Users, s.Actions)
	}
	v := s.Views()
	if len(v) != 2 || v[0].Model != Closed || len(v[0].Actions) != 0 || v[1].First != 0 || v[1].Open.MaxDelay != DefaultMaxDelay {
		t.Errorf("views %+v", v)
	}
	// The ramp-up lasts until the last group's last user: subscribers take
	// 3000 x 5 ms = 15 s, publishers start at 15 s (logging on at once).
	if got := s.RampUpLength(); got != 15*time.Second {
		t.Errorf("ramp-up %v", got)
	}
	var p struct {
		Subject string `yaml:"subject"`
	}
	if errs := s.Actions[0].Params.Decode(&p); len(errs) > 0 || p.Subject != "bench.{user}" {
		t.Errorf("params %+v %v", p, errs)
	}
}

func TestGroupsErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"users: 5\nphases: {steady: 1m}\ngroups: [{name: a, users: 1}]\n", "g.yaml:1:1: users: with groups, users belongs in each group"},
		{"phases: {steady: 1m}\ngroups: [{name: a, users: 1}, {name: a, users: 2}]\n", `groups[1].name: group name "a" is already used`},
		{"phases: {steady: 1m}\ngroups: [{name: a, users: 0}]\n", "groups[0].users: users is 0"},
		{"phases: {steady: 1m}\ngroups:\n  - {name: a, users: 2, model: open, open: {rate: 5/s}, actions: [{name: x}]}\n", "groups[0].open.rate: a group's open model takes per-action rates"},
		{"phases: {steady: 1m}\ngroups:\n  - {name: a, users: 2, model: open, actions: [{name: x}]}\n", `g.yaml:3:49: groups[0].actions[0].rate: action "x" has no rate`},
		{"groups: [{name: a, users: 1}]\n", "phases.steady: a scenario with groups needs a steady state"},
		{"phases: {steady: 1m}\ngroups:\n  - {name: a, users: 1, actions: [{name: x}]}\n  - {name: b, users: 1, actions: [{name: x}]}\n", `groups[1].actions[0].name: action name "x" is already used by groups[0].actions[0]`},
	} {
		_, err := Parse("g.yaml", []byte(tt.src), drivers)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %q", tt.src, err, tt.want)
		}
	}
}
