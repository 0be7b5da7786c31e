package web

import (
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// The program's version reaches the default User-Agent as data, through
// the family's Decode (no package variable set from outside): the
// compiled request says throng/VERSION, and throng/dev without one.
func TestFamilyUserAgentVersion(t *testing.T) {
	s, err := scenario.Parse("t.yaml", []byte("users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n"), []string{Name})
	if err != nil {
		t.Fatal(err)
	}
	for version, want := range map[string]string{"v1.2.3": "User-Agent: throng/v1.2.3\r\n", "": "User-Agent: throng/dev\r\n"} {
		c, errs := Family().Decode(s.DriverConfig, driver.Env{Target: driver.URLTarget("http://127.0.0.1:9"), Version: version})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		a, errs := c.Compile(s.Actions[0])
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if req := string(a.(driver.WireAction).WireRequest()); !strings.Contains(req, want) {
			t.Errorf("version %q: request %q lacks %q", version, req, want)
		}
	}
}
