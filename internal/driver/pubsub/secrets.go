package pubsub

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// A password never belongs in a scenario file, on the command line, in a
// result or in a log. The block names where it is read from: an environment
// variable as ${NAME} or a file as ${file:PATH} (a trailing newline is
// dropped), the syntax of the web driver's secrets. The result keeps the
// scenario as written, with the reference only. A user name may be written
// as is or read the same way.
var secretRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}$`)

// readSecret reads the secret that ref names; literal is whether a value
// written as is is accepted (user names) or refused (passwords).
func readSecret(ref string, literal bool) (string, error) {
	m := secretRef.FindStringSubmatch(strings.TrimSpace(ref))
	if m == nil {
		if literal && !strings.Contains(ref, "${") {
			return ref, nil
		}
		return "", fmt.Errorf("write where it is read from, ${NAME} (an environment variable) or ${file:PATH}, never the secret itself")
	}
	name := m[1]
	if p, ok := strings.CutPrefix(name, "file:"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("${file:%s}: %v", p, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("${%s}: the environment variable %s is not set", name, name)
	}
	return v, nil
}
