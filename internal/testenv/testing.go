package testenv

import (
	"context"
	"os"
	"testing"
)

// RequireBinary returns the path of the executable name, found with
// FindBinary(name, paths...). When it is missing, the test is skipped, unless
// the environment variable CI is non-empty: then the test fails, because in CI
// (.ci/run) every server the tests need is installed and a skip would hide
// that a test never ran. Like Skip and Fatal, it must be called from the
// goroutine running the test.
func RequireBinary(t testing.TB, name string, paths ...string) string {
	t.Helper()
	p, err := FindBinary(name, paths...)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed; .ci/run installs it (%v)", name, err)
	}
	t.Skipf("%s is not installed (%v); skipping (with CI set this is a failure)", name, err)
	return ""
}

// Nginx starts a private nginx for the test with StartNginx (bounded by the
// test's context and NginxReadyTimeout) and registers t.Cleanup to stop it
// and remove its directory; a failing Stop is reported with t.Errorf. It
// skips or fails the test as RequireBinary does when nginx is not installed,
// and fails the test if nginx does not start. Call it from the test goroutine.
func Nginx(t testing.TB, opts NginxOptions) *Server {
	t.Helper()
	return started(t, &nginxSpec, func(ctx context.Context) (*Server, error) { return StartNginx(ctx, opts) })
}
