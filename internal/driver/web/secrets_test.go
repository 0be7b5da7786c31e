package web

import (
	"strings"
	"testing"
)

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
