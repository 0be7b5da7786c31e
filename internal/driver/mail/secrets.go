package mail

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Secrets stay out of scenario files and results: the password (mail.password)
// may name an environment variable as ${NAME} or a file as ${file:PATH}.
// It is read when the block is decoded; the result keeps the
// scenario's text as written, with the reference, never the value.
var secretRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}`)

// expand replaces every ${NAME} and ${file:PATH} in s. "$${" stands for a
// literal "${".
func expand(s string) (string, error) {
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
