// Package secret reads the secrets a scenario names instead of holding:
// an environment variable as ${NAME} or a file as ${file:PATH} (a trailing
// newline dropped). A scenario, a result or a log keeps the reference as
// written, never the value; drivers expand it when they build what they
// send.
//
// Every file is read through ReadFile: a regular file of bounded size. A
// FIFO, a device (/dev/zero), a socket or a directory is refused at once
// with a message, never waited on or read without end.
package secret

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// MaxFileSize bounds a ${file:PATH} read: a secret, a header value or a
// request body. A larger file is refused, not truncated.
const MaxFileSize = 16 << 20

// refPattern is one reference: ${NAME} or ${file:PATH}.
const refPattern = `\$\{([A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}`

var (
	secretRef = regexp.MustCompile(refPattern)             // anywhere in a string
	wholeRef  = regexp.MustCompile(`^` + refPattern + `$`) // the whole value
)

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
		v, err := lookup(ref[2 : len(ref)-1])
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	})
	if firstErr != nil {
		return "", firstErr
	}
	return strings.ReplaceAll(out, escaped, "${"), nil
}

// IsRef reports whether s (spaces around it aside) is one reference and
// nothing else.
func IsRef(s string) bool { return wholeRef.MatchString(strings.TrimSpace(s)) }

// ErrLiteral is Read's refusal of a value that is not a reference.
var ErrLiteral = fmt.Errorf("write where it is read from, ${NAME} (an environment variable) or ${file:PATH}, never the secret itself")

// Read reads the value that ref, one whole reference, names. literal says
// whether a value holding no reference is taken as it is (a user name) or
// refused with ErrLiteral (a password: written in the scenario, it would
// end up in the result with the scenario's text).
func Read(ref string, literal bool) (string, error) {
	m := wholeRef.FindStringSubmatch(strings.TrimSpace(ref))
	if m == nil {
		if literal && !strings.Contains(ref, "${") {
			return ref, nil
		}
		return "", ErrLiteral
	}
	return lookup(m[1])
}

// lookup reads one reference's value: name is NAME or file:PATH.
func lookup(name string) (string, error) {
	if path, ok := strings.CutPrefix(name, "file:"); ok {
		b, err := ReadFile(path, MaxFileSize)
		if err != nil {
			return "", fmt.Errorf("${file:%s}: %v", path, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("${%s}: the environment variable %s is not set", name, name)
	}
	return v, nil
}
