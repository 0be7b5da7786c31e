package scenario

import (
	"strings"
	"testing"
)

const withVars = `
vars: {subscribers: 3000, rate: 35/s, size: 100B, subject: bench}
phases: {steady: 1m}
groups:
  - {name: subs, users: $subscribers}
  - name: pubs
    users: 5
    model: open
    actions: [{name: publish, rate: $rate, size: $size, subject: $subject, note: "$literal stays"}]
`

func TestVars(t *testing.T) {
	s, err := Parse("v.yaml", []byte(withVars), drivers)
	if err != nil {
		t.Fatal(err)
	}
	if s.Groups[0].Users != 3000 || s.Actions[0].Rate.PerSecond != 35 {
		t.Errorf("users %d rate %v", s.Groups[0].Users, s.Actions[0].Rate)
	}
	// The driver's keys read the variables too.
	var p struct {
		Size    Size   `yaml:"size"`
		Subject string `yaml:"subject"`
		Note    string `yaml:"note"`
	}
	if errs := s.Actions[0].Params.Decode(&p); len(errs) > 0 || p.Size != 100 || p.Subject != "bench" || p.Note != "$literal stays" {
		t.Errorf("params %+v %v", p, errs)
	}
	// --set changes them; the units are parsed as in the file.
	s, err = DecodeVars("v.yaml", []byte(withVars), drivers, map[string]Given{"subscribers": {"500", "flag --set"}, "rate": {"10/s", "flag --set"}})
	if err != nil || s.Groups[0].Users != 500 || s.Actions[0].Rate.PerSecond != 10 {
		t.Errorf("with --set: %v users %d rate %v", err, s.Groups[0].Users, s.Actions[0].Rate)
	}
	// An undeclared variable, and a value that does not fit, are errors.
	if _, err := DecodeVars("v.yaml", []byte(withVars), drivers, map[string]Given{"subscriber": {"5", "flag --set"}}); err == nil ||
		!strings.Contains(err.Error(), `flag --set: vars.subscriber: the scenario has no variable "subscriber"`) {
		t.Errorf("undeclared: %v", err)
	}
	_, err = DecodeVars("v.yaml", []byte(withVars), drivers, map[string]Given{"subscribers": {"many", "flag --set"}})
	if err == nil || !strings.Contains(err.Error(), `v.yaml:5:25: groups[0].users: "many" (from the variable $subscribers) does not fit here`) {
		t.Errorf("bad value: %v", err)
	}
}
