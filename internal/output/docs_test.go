package output

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/outputs.md says what the outputs send: every metric its table
// names is on the page, every CSV column it lists is written (in order),
// and every --output example in the docs and the README parses.
func TestOutputsDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/outputs.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var have []string
	for _, f := range NewFamilies() {
		have = append(have, f.Name)
	}
	tableRow := regexp.MustCompile("(?m)^\\| (`throng_[a-z_]+`(?:, `throng_[a-z_]+`)*) \\|")
	n := 0
	for _, m := range tableRow.FindAllStringSubmatch(doc, -1) {
		for _, name := range regexp.MustCompile("throng_[a-z_]+").FindAllString(m[1], -1) {
			n++
			if !slices.Contains(have, name) {
				t.Errorf("docs/outputs.md names %s; the exporter has %v", name, have)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d metrics found in the doc's table", n)
	}
	i := strings.Index(doc, "## `--output csv=FILE`")
	j := strings.Index(doc, "## `--output prometheus-rw=URL`")
	var cols []string
	for _, m := range regexp.MustCompile("(?m)^\\| (`[a-z0-9_]+`(?:, `[a-z0-9_]+`)*) \\|").FindAllStringSubmatch(doc[i:j], -1) {
		for _, c := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(m[1], -1) {
			cols = append(cols, c[1])
		}
	}
	if !slices.Equal(cols, CSVColumns) {
		t.Errorf("doc's CSV columns %v\nwritten %v", cols, CSVColumns)
	}
	for _, f := range []string{"../../docs/outputs.md", "../../README.md", "../../docs/reports.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`--output ([^\s|`+"`"+`]+)`).FindAllStringSubmatch(string(b), -1) {
			if strings.HasSuffix(m[1], "=URL") || strings.HasSuffix(m[1], "=FILE") || strings.Contains(m[1], ":PORT/") {
				continue // a placeholder
			}
			if _, err := ParseSpec(m[1]); err != nil {
				t.Errorf("%s: --output %s: %v", f, m[1], err)
			}
		}
	}
}

// NewFamilies are the families of a state fed the known intervals.
func NewFamilies() []Family {
	s := NewState(Run{Scenario: "s"})
	for _, iv := range knownIntervals() {
		s.Add(iv)
	}
	return s.Families()
}
