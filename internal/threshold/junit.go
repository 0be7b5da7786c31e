package threshold

import (
	"encoding/xml"
	"io"
	"strconv"

	"github.com/throng-io/throng/internal/result"
)

// The JUnit XML report, in the common form Jenkins, GitLab and GitHub
// test reporters read (the Ant schema): testsuites > testsuite >
// testcase, a <failure> in each failed testcase.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the outcomes of a run's thresholds as a JUnit XML
// report: one <testsuite> named after the scenario (inside <testsuites>),
// one <testcase> per outcome named "PHASE: EXPR" (the threshold without
// its phases: "steady: page.p95 < 200ms") with classname
// "throng.SCENARIO", a <failure message="..." type="threshold"> for each
// outcome that did not pass, and the message as <system-out> for those
// that did. The suite's time is the run's elapsed time; its properties
// name the label, target, scenario hash and whether the run is partial.
// Text is escaped by encoding/xml (characters XML cannot hold become
// U+FFFD). Nothing is written when marshalling fails.
func WriteJUnit(w io.Writer, run *result.Run, outs []Outcome) error {
	m := run.Meta
	elapsed := 0.0
	for _, rep := range run.Repetitions {
		elapsed += rep.ElapsedS
	}
	secs := strconv.FormatFloat(elapsed, 'f', 3, 64)
	suite := junitSuite{Name: m.Scenario, Tests: len(outs), Time: secs, Hostname: m.Host.Hostname}
	if !m.StartedAt.IsZero() {
		suite.Timestamp = m.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	for _, p := range []junitProperty{
		{"label", m.Label}, {"target", m.Target}, {"source_sha256", m.SourceSHA256},
		{"partial", strconv.FormatBool(run.Partial)},
	} {
		if p.Value != "" {
			suite.Properties = append(suite.Properties, p)
		}
	}
	for _, o := range outs {
		c := junitCase{Name: o.Phase + ": " + o.Threshold.Expr, Classname: "throng." + m.Scenario, Time: "0"}
		if o.Pass {
			c.SystemOut = o.Message
		} else {
			suite.Failures++
			c.Failure = &junitFailure{Message: o.Message, Type: "threshold", Text: o.Message}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: "throng", Tests: suite.Tests, Failures: suite.Failures, Time: secs, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
