package report

import (
	"slices"
	"strings"
)

// onePerKind keeps the first sample of each kind ("kind: text"), in order:
// the delivery sections show one example of each problem, not every one.
func onePerKind(samples []string) []string {
	var out []string
	for _, s := range samples {
		kind, _, _ := strings.Cut(s, ":")
		if !slices.ContainsFunc(out, func(x string) bool { return strings.HasPrefix(x, kind+":") }) {
			out = append(out, s)
		}
	}
	return out
}
