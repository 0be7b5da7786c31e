package files

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
)

// wireConn is the TCP connection under one SMB session. It watches the
// frames the server sends (Direct TCP: a 4-byte length, then the message)
// to learn what the library does not tell: the negotiated dialect, whether
// responses are signed, whether the session is encrypted (transform
// headers), and whether the connection has broken. Only the library's
// receiver goroutine reads, so the parser needs no lock; the results are
// atomics read by the session.
//
// It also halves the system calls of the library's transport, which writes
// each message as two writes (the 4-byte length, then the message) and
// reads each as two reads: the length is held back and sent with the
// message in one writev, and reads go through a buffer, so one message
// costs one write and (mostly) one read, and one TCP segment instead of two.
type wireConn struct {
	net.Conn
	br      *bufio.Reader
	pending [4]byte // a length written alone, sent with the next write
	held    bool
	wbuf    []byte // the length and the message, for one write

	// Frame parser state (receiver goroutine only).
	hdr   [4]byte
	hn    int // bytes of hdr read
	left  int // bytes of the current frame still to come
	head  [72]byte
	headN int // bytes of head captured
	flen  int // the current frame's length

	dialect   atomic.Uint32
	signed    atomic.Bool
	encrypted atomic.Bool
	broken    atomic.Bool
	// sessionFlags are the flags of the last successful SESSION_SETUP
	// response (+1, so that 0 means none seen); shareEncrypt is set when a
	// TREE_CONNECT response asks that the share's traffic be encrypted.
	sessionFlags atomic.Uint32
	shareEncrypt atomic.Bool
}

// SMB2 header facts used here ([MS-SMB2] 2.2.1, 2.2.4, 2.2.41).
const (
	smb2HeaderLen   = 64
	flagSigned      = 0x08
	cmdNegotiate    = 0x0000
	cmdSessionSetup = 0x0001
	cmdTreeConnect  = 0x0003
	cmdCreate       = 0x0005
	cmdRead         = 0x0008
	dialectOffset   = smb2HeaderLen + 4 // StructureSize, SecurityMode, then DialectRevision
	// SESSION_SETUP response: StructureSize, then SessionFlags (2.2.6).
	sessionFlagsOffset = smb2HeaderLen + 2
	sessionIsGuest     = 0x0001
	sessionIsNull      = 0x0002
	sessionEncryptData = 0x0004
	// TREE_CONNECT response: StructureSize, ShareType, Reserved, then
	// ShareFlags (2.2.10).
	shareFlagsOffset = smb2HeaderLen + 4
	shareEncryptData = 0x00008000
	protoPlain       = 0xFE
	protoEncrypted   = 0xFD
	protoCompressed  = 0xFC
)

func newWireConn(c net.Conn) *wireConn {
	return &wireConn{Conn: c, br: bufio.NewReaderSize(c, 64<<10)}
}

func (w *wireConn) Read(p []byte) (int, error) {
	n, err := w.br.Read(p)
	if n > 0 {
		w.parse(p[:n])
	}
	if err != nil {
		w.broken.Store(true)
	}
	return n, err
}

// Write is called by the library's sender goroutine only.
func (w *wireConn) Write(p []byte) (int, error) {
	if !w.held && len(p) == 4 {
		copy(w.pending[:], p)
		w.held = true
		return 4, nil
	}
	var err error
	n := len(p)
	switch {
	case w.held && len(p) <= 64<<10:
		w.held = false
		w.wbuf = append(append(w.wbuf[:0], w.pending[:]...), p...)
		_, err = w.Conn.Write(w.wbuf)
	case w.held:
		w.held = false
		bufs := net.Buffers{w.pending[:], p}
		_, err = bufs.WriteTo(w.Conn)
	default:
		n, err = w.Conn.Write(p)
	}
	if err != nil {
		w.broken.Store(true)
	}
	return n, err
}

func (w *wireConn) parse(p []byte) {
	for len(p) > 0 {
		if w.left == 0 {
			k := copy(w.hdr[w.hn:], p)
			w.hn += k
			p = p[k:]
			if w.hn < 4 {
				return
			}
			w.hn = 0
			w.flen = int(binary.BigEndian.Uint32(w.hdr[:]) & 0xFFFFFF)
			w.left = w.flen
			w.headN = 0
			if w.left == 0 {
				continue
			}
		}
		take := min(len(p), w.left)
		if w.headN < len(w.head) {
			w.headN += copy(w.head[w.headN:], p[:take])
		}
		w.left -= take
		p = p[take:]
		if w.left == 0 {
			w.frame()
		}
	}
}

// frame looks at the start of a complete frame.
func (w *wireConn) frame() {
	h := w.head[:w.headN]
	if len(h) < 4 || h[1] != 'S' || h[2] != 'M' || h[3] != 'B' {
		return
	}
	switch h[0] {
	case protoEncrypted:
		w.encrypted.Store(true)
	case protoPlain:
		if len(h) < smb2HeaderLen {
			return
		}
		cmd := binary.LittleEndian.Uint16(h[12:])
		status := binary.LittleEndian.Uint32(h[8:])
		flags := binary.LittleEndian.Uint32(h[16:])
		switch cmd {
		case cmdSessionSetup:
			if status == 0 && len(h) >= sessionFlagsOffset+2 {
				w.sessionFlags.Store(uint32(binary.LittleEndian.Uint16(h[sessionFlagsOffset:])) + 1)
			}
		case cmdTreeConnect:
			if status == 0 && len(h) >= shareFlagsOffset+4 &&
				binary.LittleEndian.Uint32(h[shareFlagsOffset:])&shareEncryptData != 0 {
				w.shareEncrypt.Store(true)
			}
		case cmdNegotiate:
			if len(h) >= dialectOffset+2 {
				if d := binary.LittleEndian.Uint16(h[dialectOffset:]); d != 0x02FF {
					w.dialect.Store(uint32(d))
				}
			}
		case cmdCreate, cmdRead:
			if flags&flagSigned != 0 {
				w.signed.Store(true)
			}
		}
	}
}

// observed is what a connection saw of the server's choices.
type observed struct {
	dialect   uint16
	signed    bool
	encrypted bool
}

// cannotEncrypt says why the library could not encrypt what the server
// asked it to encrypt, or "" when it can (or nothing was asked). The
// library derives encryption keys only for SMB 3.x sessions that are not
// guest or anonymous, yet encrypts whenever the server's session or share
// flags ask: on SMB 2.0.2 or 2.1 (Samba's "server smb encrypt = desired"
// sets the session flag there too), it would dereference its missing
// cipher and panic. [MS-SMB2] 3.2.5.3.1 has a 2.x client ignore the flag;
// the library cannot be told to, so throng refuses the session instead.
func (w *wireConn) cannotEncrypt() string {
	f := w.sessionFlags.Load()
	if f == 0 {
		return ""
	}
	f--
	if f&sessionEncryptData == 0 && !w.shareEncrypt.Load() {
		return ""
	}
	what := "session"
	if f&sessionEncryptData == 0 {
		what = "share"
	}
	switch d := uint16(w.dialect.Load()); {
	case d != 0 && d < 0x0300:
		return fmt.Sprintf("the server asks that the %s be encrypted (Samba: server smb encrypt = desired or required), "+
			"but the dialect it negotiated, %s, has no encryption, and the SMB library cannot go on unencrypted as a 2.x client may: "+
			"pin files.dialect to 3.0 or later, or set the server's smb encrypt to off or if_required to measure SMB 2.x", what, dialectName(d))
	case f&(sessionIsGuest|sessionIsNull) != 0:
		return fmt.Sprintf("the server asks that the %s be encrypted, but it logged the user on as a guest or anonymously, "+
			"and a guest session has no keys to encrypt with: check the user and password (Samba: map to guest)", what)
	}
	return ""
}

func (w *wireConn) observed() observed {
	return observed{dialect: uint16(w.dialect.Load()), signed: w.signed.Load(), encrypted: w.encrypted.Load()}
}
