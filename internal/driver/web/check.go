package web

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/theory/jsonpath"

	"github.com/throng-io/throng/internal/scenario"
)

// CheckPrefix names a check's row in results: "check:NAME" counts each
// time the check was made, and its failures in class check.
const CheckPrefix = "check:"

// checkSpec is one entry of a step's checks: what is looked at (the body,
// a JSON value, a header) and what it must be.
type checkSpec struct {
	Name string `yaml:"name"` // unique among the scenario's checks; default STEP#N
	// What is looked at: the body by default, or one JSON value, or one
	// header (the last response's).
	JSON   string `yaml:"json"`
	Header string `yaml:"header"`
	// What it must be (one of them).
	Contains    string  `yaml:"contains"`
	NotContains string  `yaml:"not_contains"`
	Matches     string  `yaml:"matches"`
	Equals      *string `yaml:"equals"`
	Exists      *bool   `yaml:"exists"`
}

// check is a compiled check.
type check struct {
	name    string
	row     int    // index among the driver's check rows
	subject string // "body", "json $.x", "header X"
	path    *jsonpath.Path
	header  string
	op      string // contains, not_contains, matches, equals, exists
	arg     string
	re      *regexp.Regexp
	exists  bool
}

// compileChecks decodes a step's checks list; step names the step for the
// default names.
func compileChecks(block scenario.Node, step string) ([]*check, []error) {
	var specs []scenario.Node
	errs := block.Decode(&specs)
	var out []*check
	for i, n := range specs {
		var s checkSpec
		if es := n.Decode(&s); len(es) > 0 {
			errs = append(errs, es...)
			continue
		}
		c := &check{name: s.Name, subject: "body"}
		if c.name == "" {
			c.name = step + "#" + strconv.Itoa(i+1)
		}
		if strings.ContainsAny(c.name, " \t\r\n") {
			errs = append(errs, n.Errorf("name", "check name %q: no spaces (it names a row, read by thresholds)", c.name))
		}
		if s.JSON != "" && s.Header != "" {
			errs = append(errs, n.Errorf("header", "check %s: look at json or header, not both", c.name))
			continue
		}
		var err error
		switch {
		case s.JSON != "":
			c.subject = "json " + s.JSON
			if c.path, err = jsonpath.Parse(s.JSON); err != nil {
				v, _ := n.Get("json")
				errs = append(errs, v.ErrorAt(0, "check %s: JSONPath %q: %v", c.name, s.JSON, jsonpathMessage(err)))
			}
		case s.Header != "":
			c.subject = "header " + s.Header
			c.header = http.CanonicalHeaderKey(s.Header)
		}
		given := 0
		for _, p := range []struct {
			op, arg string
			set     bool
		}{
			{"contains", s.Contains, s.Contains != ""}, {"not_contains", s.NotContains, s.NotContains != ""},
			{"matches", s.Matches, s.Matches != ""}, {"equals", deref(s.Equals), s.Equals != nil}, {"exists", "", s.Exists != nil},
		} {
			if p.set {
				given++
				c.op, c.arg = p.op, p.arg
			}
		}
		if given != 1 {
			errs = append(errs, n.Errorf("", "check %s: give one of contains, not_contains, matches, equals, exists", c.name))
			continue
		}
		switch c.op {
		case "matches":
			if c.re, err = regexp.Compile(s.Matches); err != nil {
				v, _ := n.Get("matches")
				errs = append(errs, v.ErrorAt(0, "check %s: %v", c.name, err))
			}
		case "exists":
			c.exists = *s.Exists
			if c.subject == "body" {
				errs = append(errs, n.Errorf("exists", "check %s: exists is for a json value or a header", c.name))
			}
		}
		out = append(out, c)
	}
	return out, errs
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// verify returns nil when r passes the check, else why not (the check's
// name first).
func (c *check) verify(r *response) error {
	var subject []byte
	found := true
	switch {
	case c.path != nil:
		doc, err := r.decodedJSON()
		if err != nil {
			return fmt.Errorf("check %s: %v", c.name, err)
		}
		nodes := c.path.Select(doc)
		found = len(nodes) > 0
		if found {
			subject = []byte(jsonText(nodes[0]))
		}
	case c.header != "":
		vs := r.header[c.header]
		found = len(vs) > 0
		if found {
			subject = []byte(strings.Join(vs, ", "))
		}
	default:
		subject = r.body
	}
	ok := false
	switch c.op {
	case "exists":
		if found == c.exists {
			return nil
		}
		if c.exists {
			return fmt.Errorf("check %s: no %s", c.name, c.subject)
		}
		return fmt.Errorf("check %s: %s is there (%s)", c.name, c.subject, excerpt(subject))
	case "contains":
		ok = found && bytes.Contains(subject, []byte(c.arg))
	case "not_contains":
		ok = !bytes.Contains(subject, []byte(c.arg))
	case "matches":
		ok = found && c.re.Match(subject)
	case "equals":
		ok = found && string(subject) == c.arg
	}
	if ok {
		return nil
	}
	if !found {
		return fmt.Errorf("check %s: no %s", c.name, c.subject)
	}
	want := strings.ReplaceAll(c.op, "_", " ")
	return fmt.Errorf("check %s: %s does not pass %s %q (got %s)", c.name, c.subject, want, c.arg, excerpt(subject))
}

// excerpt is the start of a value, quoted, for a message.
func excerpt(b []byte) string {
	const max = 80
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
