package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-11-28T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	in := fromBuild(bi)
	want := Info{Version: "dev", Commit: "0123456789abcdef0123", Date: "2026-11-28T10:00:00Z", Modified: true, Go: "go1.99.1"}
	if in != want {
		t.Fatalf("fromBuild = %+v, want %+v", in, want)
	}
	if got, w := in.String(), "dev (commit 0123456789ab+dirty, 2026-11-28T10:00:00Z, go1.99.1)"; got != w {
		t.Errorf("String = %q, want %q", got, w)
	}
	bi.Main.Version = "v1.2.3"
	bi.Settings = nil
	if got, w := fromBuild(bi).String(), "v1.2.3 (go1.99.1)"; got != w {
		t.Errorf("module version: String = %q, want %q", got, w)
	}
	old := Version
	Version = "v9.9.9"
	defer func() { Version = old }()
	if got := fromBuild(bi).Version; got != "v9.9.9" {
		t.Errorf("link-time version: %q, want v9.9.9", got)
	}
	if got := fromBuild(nil).Version; got != "v9.9.9" {
		t.Errorf("no build info: %q", got)
	}
}

// TestReadThisBinary checks the test binary's own information is read: a
// Go release always, and the version never empty.
func TestReadThisBinary(t *testing.T) {
	in := Read()
	if in.Go == "" || in.Version == "" {
		t.Fatalf("Read = %+v", in)
	}
}
