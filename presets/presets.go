// Package presets holds the built-in scenarios, one YAML file per preset,
// embedded in the binary. `throng presets` lists them and `throng presets
// show NAME` prints one to copy and edit.
//
// Each preset reproduces a study (docs/studies.md) and says so in its
// description. Its header comment states, one per line, what its default
// runs ("# Default: ...") and the command of the study's full scale
// ("# Full scale: throng run NAME ..."); the variables that scale it are
// its vars, each given with --set NAME=VALUE.
package presets

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the presets, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Source returns a preset's file name and text.
func Source(name string) (file string, src []byte, ok bool) {
	file = name + ".yaml"
	b, err := files.ReadFile(file)
	if err != nil || strings.ContainsAny(name, "/\\") {
		return "", nil, false
	}
	return "presets/" + file, b, true
}

// Header returns the text of a preset's header comment line "# KEY: text"
// (like "Full scale"), with the lines indented under it, joined by
// spaces; "" when the preset has none.
func Header(name, key string) string {
	_, src, ok := Source(name)
	if !ok {
		return ""
	}
	var parts []string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			break // the header comment ends at the first key
		}
		switch {
		case strings.HasPrefix(text, " "+key+":"):
			in = true
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(text, " "+key+":")))
		case in && strings.HasPrefix(text, "   ") && strings.TrimSpace(text) != "":
			parts = append(parts, strings.TrimSpace(text))
		default:
			in = false
		}
	}
	return strings.Join(parts, " ")
}

// FullScale returns the command that runs a preset at its study's full
// scale ("throng run NAME ..."), from its "# Full scale:" line.
func FullScale(name string) string { return Header(name, "Full scale") }
