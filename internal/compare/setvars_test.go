package compare

import (
	"testing"

	"github.com/throng-io/throng/internal/result"
)

// The scenario variables a run was given are read from its record of
// settings by key path ("vars.size"), and from older results' flags
// ("--set size"), alike.
func TestSetVarsBothSpellings(t *testing.T) {
	for _, over := range []map[string]string{
		{"vars.size": "8KB", "vars.inbox": "20", "users": "10"},
		{"--set size": "8KB", "--set inbox": "20", "--users": "10"},
	} {
		if got := setVars(result.Meta{Overrides: over}); got != "inbox=20 size=8KB" {
			t.Errorf("%v: %q", over, got)
		}
	}
	if got := setVars(result.Meta{Overrides: map[string]string{"users": "10"}}); got != "none" {
		t.Errorf("no variables: %q", got)
	}
}
