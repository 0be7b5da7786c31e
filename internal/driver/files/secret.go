package files

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// A password never belongs in a scenario file, on the command line, in a
// result or in a log. The files block names where it is read from: an
// environment variable as ${NAME} or a file as ${file:PATH} (a trailing
// newline is dropped), the same syntax as the web driver's secrets. The
// result keeps the scenario as written, with the reference only.
var secretRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}$`)

// DefaultPassword is where the password is read from when the block does
// not say.
const DefaultPassword = "${SMB_PASSWORD}"

// readSecret reads the secret that ref names. A literal value is refused:
// it would end up in the result file with the scenario's text.
func readSecret(ref string) (string, error) {
	m := secretRef.FindStringSubmatch(strings.TrimSpace(ref))
	if m == nil {
		return "", fmt.Errorf("write where the password is read from, ${NAME} (an environment variable) or ${file:PATH}, never the password itself")
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
