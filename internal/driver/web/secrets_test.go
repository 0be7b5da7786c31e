package web

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
		got, err := expand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expand(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSecretsReachTheRequestOnly(t *testing.T) {
	t.Setenv("THRONG_TEST_SECRET", "s3cr3t")
	_, acts := config(t, "http://127.0.0.1:1", `{headers: {Authorization: "Bearer ${THRONG_TEST_SECRET}"}}`, "{path: /}")
	if req := string(acts[0].(*action).req); !strings.Contains(req, "Authorization: Bearer s3cr3t\r\n") {
		t.Errorf("request:\n%s", req)
	}
	if _, errs := Decode(blockOf(t, "{}"), "http://user:pw@127.0.0.1:1"); len(errs) == 0 || strings.Contains(errs[0].Error(), "pw") {
		t.Errorf("credentials in the target: %v", errs)
	}
}
