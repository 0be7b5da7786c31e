package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Setenv("THRONG_TEST_SECRET", "s3cr3t")
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("from-a-file\n"), 0o600)
	for _, tt := range []struct {
		in, want, err string
	}{
		{"Bearer ${THRONG_TEST_SECRET}", "Bearer s3cr3t", ""},
		{"${file:" + file + "}", "from-a-file", ""},
		{"no reference", "no reference", ""},
		{"literal $${NAME}", "literal ${NAME}", ""},
		{"${THRONG_TEST_UNSET_VARIABLE}", "", "THRONG_TEST_UNSET_VARIABLE is not set"},
		{"${file:/no/such/file}", "", "/no/such/file"},
	} {
		got, err := Expand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
