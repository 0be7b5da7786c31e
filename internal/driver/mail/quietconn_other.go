//go:build !linux

package mail

import "net"

// quiet returns the connection as is (quietConn is Linux's).
func quiet(nc net.Conn) net.Conn { return nc }
