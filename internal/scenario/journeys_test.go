package scenario

import (
	"strings"
	"testing"
)

func TestJourneysDecode(t *testing.T) {
	s, err := Parse("j.yaml", []byte(`users: 2
closed: {iterations: 3}
journeys:
  - name: buy
    weight: 2
    steps:
      - name: home
        path: /
        think: 1s
      - {name: login, method: POST, repeat: 2}
      - name: pages
        while: '{{ .next }}'
        max: 5
  - name: look
    steps:
      - path: /x
`), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Actions) != 4 {
		t.Fatalf("%d actions, want the 4 steps", len(s.Actions))
	}
	a := s.Actions
	if a[0].Name != "home" || a[0].Journey != "buy" || a[0].Think.D().Seconds() != 1 || a[0].Repeat != 1 || a[0].MaxRounds != DefaultMaxRounds {
		t.Errorf("home: %+v", a[0])
	}
	if a[1].Repeat != 2 || a[2].While != "{{ .next }}" || a[2].MaxRounds != 5 || a[3].Name != "look.1" || a[3].Journey != "look" {
		t.Errorf("steps: %+v", a[1:])
	}
	if s.Journeys[0].Weight != 2 || s.Journeys[1].Weight != 1 {
		t.Errorf("weights %v %v", s.Journeys[0].Weight, s.Journeys[1].Weight)
	}
	// The step's driver keys are its Params, positioned; ErrorAt points
	// inside a value.
	w, ok := a[2].Node.Get("while")
	if !ok {
		t.Fatal("no while node")
	}
	if got := w.ErrorAt(4, "here").Error(); got != "j.yaml:12:21: journeys[0].steps[2].while: here" {
		t.Errorf("ErrorAt: %s", got)
	}
	if got := a[0].Params.Errorf("path", "p").Error(); got != "j.yaml:8:9: journeys[0].steps[0].path: p" {
		t.Errorf("params: %s", got)
	}
}

// Each bad journey gives its message at its place.
func TestJourneysBadInput(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\njourneys: [{name: j, steps: [{path: /}]}]\n",
			"t.yaml:3:1: actions: give actions (a weighted mix) or journeys (ordered steps), not both"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {path: /, repeat: 2, while: x}\n",
			"t.yaml:6:30: journeys[0].steps[0].while: give repeat (a count) or while (a condition), not both"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {path: /, max: 3}\n",
			"t.yaml:6:19: journeys[0].steps[0].max: max bounds a while step: give while too"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {path: /, think: -1s}\n",
			"journeys[0].steps[0].think: think must not be negative"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {path: /, repeat: 0}\n",
			"t.yaml:6:19: journeys[0].steps[0].repeat: repeat 0 is not between 1 and 1000000"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps: []\n",
			"t.yaml:5:5: journeys[0].steps: journey \"j\" has no steps"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - {name: j, steps: [{path: /}]}\n  - {name: j, steps: [{name: x, path: /}]}\n",
			"t.yaml:5:6: journeys[1].name: journey name \"j\" is already used by journeys[0]"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - {name: j, steps: [{name: a, path: /}]}\n  - {name: k, steps: [{name: a, path: /}]}\n",
			"journeys[1].steps[0].name: action name \"a\" is already used by journeys[0].steps[0]"},
		{"users: 1\nmodel: open\nphases: {steady: 10s}\njourneys:\n  - {name: j, steps: [{path: /}]}\n",
			"t.yaml:2:1: model: journeys in the open model arrive at open.rate, each arrival one journey: give open.rate"},
		{"users: 1\nmodel: open\nopen: {rate: 1/s}\nphases: {steady: 10s}\njourneys:\n  - {name: j, steps: [{path: /}]}\n",
			""}, // the open model at open.rate: an arrival is a journey
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - {name: j, steps: [{path: /, whlie: x}]}\n",
			""}, // an unknown step key is the driver's to refuse (its params)
	} {
		_, err := Parse("t.yaml", []byte(tc.src), []string{"web"})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}
