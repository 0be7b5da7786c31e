// Package buildinfo says which build of throng is running: its version,
// the commit and time it was built from, and the Go release, so that two
// builds can be told apart in a result and in `throng version`.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is throng's version when set at link time with
// -ldflags "-X github.com/throng-io/throng/internal/buildinfo.Version=v1.2.3".
// When empty, the module version from the build information is used
// (set by `go install module@version`), else "dev".
var Version = ""

// Info describes one build.
type Info struct {
	Version  string // v1.2.3, or "dev" for a build from a work tree
	Commit   string // VCS revision the build was made from; empty when unknown
	Date     string // commit time, RFC 3339; empty when unknown
	Modified bool   // the work tree had changes that were not committed
	Go       string // Go release that compiled it, like go1.26.8
}

// Read returns the running program's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fromBuild(nil)
	}
	return fromBuild(bi)
}

// fromBuild is Read's rule applied to bi (nil: no build information).
func fromBuild(bi *debug.BuildInfo) Info {
	in := Info{Version: Version, Go: runtime.Version()}
	if bi == nil {
		if in.Version == "" {
			in.Version = "dev"
		}
		return in
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Date = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// ShortCommit is the commit's first 12 hex digits, with "+dirty" when the
// work tree had uncommitted changes; empty when the commit is unknown.
func (in Info) ShortCommit() string {
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c != "" && in.Modified {
		c += "+dirty"
	}
	return c
}

// String is the one-line form `throng --version` prints:
// "v1.2.3 (commit 0123456789ab, 2026-11-28T10:00:00Z, go1.26.8)".
func (in Info) String() string {
	parts := []string{}
	if c := in.ShortCommit(); c != "" {
		parts = append(parts, "commit "+c)
	}
	if in.Date != "" {
		parts = append(parts, in.Date)
	}
	parts = append(parts, in.Go)
	return fmt.Sprintf("%s (%s)", in.Version, strings.Join(parts, ", "))
}
