package testenv

import (
	"errors"
	"fmt"
	"net"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: it
// listens on 127.0.0.1:0, notes the port and closes the listener. Another
// process may take the port before the caller binds it, so callers must detect
// "address already in use" and retry (StartNginx does).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: picking a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("testenv: picking a free port: %w", err)
	}
	return port, nil
}

// portAttempts is how many ports a server start tries when the one it chose
// is found taken (another process bound it between FreePort and the server).
const portAttempts = 5

// onFreePort calls start with ports from nextPort (FreePort when nil) until
// one start does not fail with errAddrInUse, portAttempts times at most.
// Any other error ends it at once. name labels the final error.
func onFreePort[T any](name string, nextPort func() (int, error), start func(port int) (T, error)) (T, error) {
	var zero T
	if nextPort == nil {
		nextPort = FreePort
	}
	var errs []error
	for range portAttempts {
		port, err := nextPort()
		if err != nil {
			return zero, err
		}
		s, err := start(port)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) {
			return zero, err
		}
		errs = append(errs, err)
	}
	return zero, fmt.Errorf("testenv: %s: every port tried was taken: %w", name, errors.Join(errs...))
}
