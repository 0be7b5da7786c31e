package threshold

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The report as a CI reader sees it, declared apart from the writer's
// types so that a change in those cannot hide a change in the document.
type readSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Skipped    int    `xml:"skipped,attr"`
		Time       string `xml:"time,attr"`
		Timestamp  string `xml:"timestamp,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	run := fakeRun(fakeRep(0,
		ivSpec{phase: "steady", count: 1000, errs: 30},
		ivSpec{phase: "steady", count: 1000, bound: true},
	))
	run.Meta.Scenario, run.Meta.Label = `web "static" & co`, "nginx <1.22>"
	run.Meta.StartedAt = time.Date(2026, 11, 21, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	var ts []Threshold
	for _, text := range []string{"p95 < 500ms", "*: error_rate < 1%", "client_bound == false", "ramp-up: rate > 1/s"} {
		th, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	outs := EvaluateAll(run, ts)
	var b bytes.Buffer
	if err := WriteJUnit(&b, run, outs); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	if !strings.HasPrefix(doc, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<testsuites ") {
		t.Errorf("header:\n%s", doc)
	}
	// Well-formed from the first token to the last.
	dec := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
	}
	var got readSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 4 || got.Failures != 3 || got.Errors != 0 || len(got.Suites) != 1 {
		t.Fatalf("testsuites: tests %d failures %d suites %d", got.Tests, got.Failures, len(got.Suites))
	}
	s := got.Suites[0]
	if s.Name != `web "static" & co` || s.Tests != 4 || s.Failures != 3 || s.Skipped != 0 || s.Time != "2.000" || s.Timestamp != "2026-11-21T11:00:00" {
		t.Errorf("testsuite %+v", s)
	}
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["label"] != "nginx <1.22>" || props["partial"] != "false" {
		t.Errorf("properties %v", props)
	}
	want := []struct {
		name string
		fail string // "" for a pass
	}{
		{"steady: p95 < 500ms", ""},
		{"steady: error_rate < 1%", "error_rate in the steady phase is 1.5%: not < 1%"},
		{"steady: client_bound == false", "client_bound in the steady phase is true: not == false"},
		{"ramp-up: rate > 1/s", "rate in the ramp-up phase: no data: this run has no ramp-up phase"},
	}
	if len(s.Cases) != len(want) {
		t.Fatalf("%d testcases", len(s.Cases))
	}
	for i, w := range want {
		c := s.Cases[i]
		if c.Name != w.name || c.Classname != `throng.web "static" & co` || c.Time != "0" {
			t.Errorf("testcase %d: %+v", i, c)
		}
		switch {
		case w.fail == "" && (c.Failure != nil || !strings.Contains(c.SystemOut, "within < 500 ms")):
			t.Errorf("%s should pass: %+v", w.name, c)
		case w.fail != "" && (c.Failure == nil || !strings.HasPrefix(c.Failure.Message, w.fail) || c.Failure.Type != "threshold" || c.Failure.Text != c.Failure.Message):
			t.Errorf("%s: failure %+v, want message %q", w.name, c.Failure, w.fail)
		}
	}
}

// Characters XML cannot hold do not break the document.
func TestJUnitControlCharacters(t *testing.T) {
	run := fakeRun(fakeRep(0, ivSpec{phase: "steady", count: 10}))
	run.Meta.Scenario = "bad\x00name\x1b"
	outs := []Outcome{{Threshold: Threshold{Text: "p95 < 1ms", Expr: "p95 < 1ms"}, Phase: "steady", Message: "line1\nline2\x07"}}
	var b bytes.Buffer
	if err := WriteJUnit(&b, run, outs); err != nil {
		t.Fatal(err)
	}
	var got readSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if f := got.Suites[0].Cases[0].Failure; f == nil || !strings.HasPrefix(f.Message, "line1\nline2") {
		t.Errorf("failure %+v", f)
	}
}
