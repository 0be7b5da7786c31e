package mail

import (
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// provisioning is a target that lets throng write its accounts.
type provisioning struct{ driver.URLTarget }

func (provisioning) Provision([]string, string, map[string][]string) error { return nil }

// Account provisioning is found on the target (driver.Provisioner), never
// by its URL: a target with the ability becomes the Config's Provisioner,
// one without (a server elsewhere) does not.
func TestFamilyFindsProvisionerOnTarget(t *testing.T) {
	const url = target
	for _, tc := range []struct {
		target driver.Target
		want   bool
	}{
		{provisioning{driver.URLTarget(url)}, true},
		{driver.URLTarget(url), false},
	} {
		c, errs := Family().Decode(scenario.Node{}, driver.Env{Target: tc.target})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := c.(*Config).Provisioner != nil; got != tc.want {
			t.Errorf("%T: provisioner %v, want %v", tc.target, got, tc.want)
		}
	}
}
