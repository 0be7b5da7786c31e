package presets

import (
	"strings"
	"testing"
)

// Header reads a header comment line and the lines indented under it,
// and only from the header comment.
func TestHeader(t *testing.T) {
	if got := Header("domino-r6", "Default"); !strings.HasPrefix(got, "300 users in 3 groups of 100") ||
		!strings.HasSuffix(got, "or a larger machine.") || strings.Contains(got, "#") || strings.Contains(got, "  ") {
		t.Errorf("domino-r6 Default: %q", got)
	}
	if got := FullScale("loadsim-online"); got != "throng run loadsim-online --duration 8h" {
		t.Errorf("loadsim-online full scale: %q", got)
	}
	if got := Header("web-open", "Full scale"); got != "" {
		t.Errorf("web-open has no full scale, got %q", got)
	}
	if got := Header("nope", "Default"); got != "" {
		t.Errorf("no preset: %q", got)
	}
	// "name:" is a key of the file, not of its header comment.
	if got := Header("web-static", "name"); got != "" {
		t.Errorf("a key after the header: %q", got)
	}
}
