// Package secret reads the secrets a scenario names instead of holding:
// an environment variable as ${NAME} or a file as ${file:PATH} (a trailing
// newline dropped). A scenario, a result or a log keeps the reference as
// written, never the value; drivers expand it when they build what they
// send.
package secret

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// secretRef matches one reference.
var secretRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}`)

// Expand replaces every ${NAME} and ${file:PATH} in s. "$${" stands for a
// literal "${".
func Expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	const escaped = "\x00dollar-brace\x00"
	s = strings.ReplaceAll(s, "$${", escaped)
	var firstErr error
	out := secretRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if path, ok := strings.CutPrefix(name, "file:"); ok {
			b, err := os.ReadFile(path)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("${file:%s}: %v", path, err)
			}
			return strings.TrimRight(string(b), "\r\n")
		}
		v, ok := os.LookupEnv(name)
		if !ok && firstErr == nil {
			firstErr = fmt.Errorf("${%s}: the environment variable %s is not set", name, name)
		}
		return v
	})
	if firstErr != nil {
		return "", firstErr
	}
	return strings.ReplaceAll(out, escaped, "${"), nil
}
