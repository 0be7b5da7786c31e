package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The default result file stays under results/ whatever the scenario's
// name: path separators, "..", control characters and leading dots or
// dashes are cleaned out.
func TestDefaultOutStaysUnderResults(t *testing.T) {
	for name, want := range map[string]string{
		"web-static":             "web-static",
		"../../x":                "x",
		"/etc/passwd":            "etc-passwd",
		"a/../../b":              "a-..-..-b",
		"..":                     "run",
		"":                       "run",
		"-rf":                    "rf",
		".hidden":                "hidden",
		"my site: checkout":      "my-site-checkout",
		"tab\there\x1b[31m":      "tab-here-31m",
		"café":                   "café",
		strings.Repeat("x", 300): strings.Repeat("x", 64),
	} {
		out := defaultOut(name)
		if filepath.Dir(out) != "results" || !strings.HasPrefix(filepath.Base(out), want+"-") {
			t.Errorf("name %q: result %q, want results/%s-TIME.json", name, out, want)
		}
	}
}
