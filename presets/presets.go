// Package presets holds the built-in scenarios, one YAML file per preset,
// embedded in the binary. `throng presets` lists them and `throng presets
// show NAME` prints one to copy and edit.
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
