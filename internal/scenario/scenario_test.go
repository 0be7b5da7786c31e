package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var drivers = []string{"web"}

const good = `
name: demo
users: 10
model: closed
closed:
  iterations: 100
  think: 1s
  think_distribution: exponential
phases:
  ramp_up: {every: 2s, group: 5, pause: 1m}
web:
  timeout: 3s
actions:
  - name: page
    path: /one.html
  - name: post
    weight: 3
    method: POST
    body_size: 1KB
`

func TestParseGood(t *testing.T) {
	t.Parallel()
	s, err := Parse("good.yaml", []byte(good), drivers)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if s.Users != 10 || s.Closed.Iterations != 100 || s.Closed.Think.D() != time.Second {
		t.Errorf("decoded %+v", s)
	}
	if s.Driver != "web" || s.DriverConfig.IsZero() {
		t.Errorf("driver block not bound: %q", s.Driver)
	}
	if len(s.Actions) != 2 || s.Actions[0].Weight != 1 || s.Actions[1].Weight != 3 {
		t.Errorf("actions = %+v", s.Actions)
	}
	// The driver's keys stay undecoded for the driver, with their positions.
	var p struct {
		Method   string `yaml:"method"`
		BodySize Size   `yaml:"body_size"`
	}
	if errs := s.Actions[1].Params.Decode(&p); len(errs) > 0 || p.Method != "POST" || p.BodySize != 1000 {
		t.Errorf("params = %+v, %v", p, errs)
	}
	// Staged ramp: 2 groups of 5 users, one every 2 s, 1 minute apart:
	// the last user starts at 9*2s + 1m, and the ramp ends one step later.
	if got, want := s.RampUpLength(), 9*2*time.Second+time.Minute+2*time.Second; got != want {
		t.Errorf("RampUpLength = %v, want %v", got, want)
	}
}

// errorsOf parses src and returns the messages, one per problem.
func errorsOf(t *testing.T, src string) []string {
	t.Helper()
	_, err := Parse("bad.yaml", []byte(src), drivers)
	if err == nil {
		t.Fatalf("Parse accepted:\n%s", src)
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %T is not Errors: %v", err, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Error())
	}
	return out
}

func TestParseErrorsArePositioned(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		src  string
		want []string // one entry per expected error, each a substring
	}{
		{"unknown key with suggestion", "users: 1\nuserz: 2\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:1: userz: unknown key "userz" (did you mean "users"?)`}},
		{"unknown nested key", "users: 1\nclosed: {iterations: 1, thinking: 2s}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:25: closed.thinking: unknown key "thinking"; known keys: iterations, pacing, think, think_distribution, total`}},
		{"wrong type", "users: ten\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:1:8: users: want a whole number, got "ten"`}},
		{"bad unit", "users: 1\nclosed: {think: 3 seconds, iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:17: closed.think: bad duration "3 seconds"`}},
		{"duration without unit", "users: 1\nphases: {steady: 30}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:18: phases.steady: duration "30" has no unit`}},
		{"negative users", "users: -5\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:1:1: users: users is -5: it must be at least 1`}},
		{"steady shorter than interval", "users: 1\ninterval: 10s\nphases: {steady: 5s}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:10: phases.steady: steady state 5s is shorter than one interval (10s)`}},
		{"zero rate", "users: 1\nmodel: open\nopen: {rate: 0/s}\nphases: {steady: 1m}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:8: open.rate: a rate of 0/s never starts anything`}},
		{"zero per-action rate", "users: 1\nmodel: open\nphases: {steady: 1m}\nactions:\n  - name: a\n    rate: 0/8h\n",
			[]string{`bad.yaml:6:5: actions[0].rate: a rate of 0/8h never starts anything`}},
		{"closed run without an end", "users: 1\nactions: [{path: /}]\n",
			[]string{`phases.steady: a closed run needs an end`}},
		{"rate in closed model", "users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, rate: 3/s}\n",
			[]string{`bad.yaml:4:15: actions[0].rate: a per-user rate belongs to the open model`}},
		{"pacing with think", "users: 1\nclosed: {iterations: 1, think: 1s, pacing: 2s}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:36: closed.pacing: pacing (when each iteration starts) and think (a pause after each action) exclude each other`}},
		{"negative pacing", "users: 1\nclosed: {iterations: 1, pacing: -2s}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:25: closed.pacing: pacing must not be negative`}},
		{"two problems, two messages, in file order", "users: 0\nclosed: {iterations: -1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:1:1: users`, `bad.yaml:2:10: closed.iterations: iterations must not be negative`}},
		{"duplicate key", "users: 1\nusers: 2\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:1: YAML syntax: mapping key "users" already defined at [1:1]`}},
		{"syntax error has a column", "users: 1\nactions: [{path: /}\n",
			[]string{`bad.yaml:2:10: YAML syntax: sequence end token ']' not found`}},
		{"two driver blocks", "users: 1\nweb: {}\nmail: {}\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:1: mail: unknown key "mail"`}},
		{"no actions", "users: 1\nclosed: {iterations: 1}\n",
			[]string{`actions: there are no actions`}},
		{"staged ramp needs every", "users: 4\nclosed: {iterations: 1}\nphases: {ramp_up: {group: 2}}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:10: phases.ramp_up: a staged ramp needs every`}},
		{"pause without group", "users: 4\nclosed: {iterations: 1}\nphases: {ramp_up: {every: 1s, pause: 1m}}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:31: phases.ramp_up.pause: pause separates groups: set group`}},
		{"trim leaves nothing", "users: 1\nruns: 2\ntrim: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:3:1: trim: trim 1 drops 2 of 2 runs`}},
		{"target URL without a host", "users: 1\ntarget: http:///index.html\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
			[]string{`bad.yaml:2:1: target: target "http:///index.html" is not "embedded" nor a URL`}},
		{"empty file", "", []string{`bad.yaml: the file is empty`}},
		{"not a mapping", "- a\n- b\n", []string{`a scenario is a mapping`}},
		{"two documents", "users: 1\n---\nusers: 2\n", []string{`holds one YAML document`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := errorsOf(t, tt.src)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("error %d = %q\nwant it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestSetOverridesNameTheFlag(t *testing.T) {
	t.Parallel()
	s, err := Decode("f.yaml", []byte("users: 10\nclosed: {iterations: 5}\nactions: [{path: /}]\n"), drivers)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("users", Given{"-3", "flag --users"}); err != nil {
		t.Fatal(err)
	}
	errs := s.Validate()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "flag --users: users: users is -3") {
		t.Errorf("Validate after --users -3 = %v", errs)
	}
	if err := s.Set("phases.steady", Given{"ten", "flag --duration"}); err == nil || !strings.Contains(err.Error(), "flag --duration") {
		t.Errorf("Set(--duration ten) = %v, want an error naming the flag", err)
	}
	if err := s.Set("users", Given{"4", "flag --users"}); err != nil || s.Users != 4 {
		t.Errorf("Set(--users 4): users=%d err=%v", s.Users, err)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	src := `
users: 2
closed: {iterations: 3}
base: &base {path: /one.html, method: GET}
actions:
  - <<: *base
    name: a
  - <<: *base
    name: b
    path: /two.html
`
	// "base" is not a scenario key: anchors must live on known keys.
	if _, err := Parse("a.yaml", []byte(src), drivers); err == nil || !strings.Contains(err.Error(), `unknown key "base"`) {
		t.Errorf("want unknown key base, got %v", err)
	}
	src = strings.Replace(src, "base: &base {path: /one.html, method: GET}\n", "", 1)
	src = strings.Replace(src, "actions:\n  - <<: *base\n", "actions:\n  - &base\n    path: /one.html\n    method: GET\n", 1)
	s, err := Parse("a.yaml", []byte(src), drivers)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var p struct {
		Path   string `yaml:"path"`
		Method string `yaml:"method"`
	}
	if errs := s.Actions[1].Params.Decode(&p); len(errs) > 0 || p.Path != "/two.html" || p.Method != "GET" {
		t.Errorf("merged action = %+v %v", p, errs)
	}
}

// A target without a host is a local path only in a scheme the family
// declares (driver.Family.LocalSchemes): file:///tmp is refused until the
// scenario allows the file scheme, and never http:///tmp.
func TestLocalTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target string
		allow  []string
		ok     bool
	}{
		{"file:///tmp/x", nil, false},
		{"file:///tmp/x", []string{"file"}, true},
		{"http:///tmp/x", []string{"file"}, false},
		{"file://localhost/tmp/x", nil, true},
	} {
		s, err := Decode("f.yaml", []byte("users: 1\ntarget: "+tc.target+"\nclosed: {iterations: 1}\nactions: [{path: /}]\n"), drivers)
		if err != nil {
			t.Fatal(err)
		}
		s.AllowLocalTargets(tc.allow)
		errs := s.Validate()
		if ok := len(errs) == 0; ok != tc.ok {
			t.Errorf("%s allowing %v: %v", tc.target, tc.allow, errs)
		}
		if !tc.ok && (len(errs) != 1 || !strings.Contains(errs[0].Error(), `f.yaml:2:1: target: target "`+tc.target+`" is not "embedded" nor a URL`)) {
			t.Errorf("%s: %v", tc.target, errs)
		}
	}
}
