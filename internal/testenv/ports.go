package testenv

import (
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
