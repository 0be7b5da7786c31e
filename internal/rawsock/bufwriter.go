package rawsock

import "net"

// BuffersWriter writes several buffers in as few system calls as the
// connection allows (writev), consuming them as net.Buffers.WriteTo does.
// The connections Quiet returns are ones; net.Buffers.WriteTo on a wrapper
// of a TCP connection falls back to one write per buffer.
type BuffersWriter interface {
	WriteBuffers(b *net.Buffers) (int64, error)
}
