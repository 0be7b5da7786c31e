package files

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
)

// frame builds a Direct TCP frame holding an SMB2 message.
func frame(proto byte, cmd uint16, flags uint32, body []byte) []byte {
	msg := make([]byte, 64+len(body))
	copy(msg, []byte{proto, 'S', 'M', 'B'})
	binary.LittleEndian.PutUint16(msg[12:], cmd)
	binary.LittleEndian.PutUint32(msg[16:], flags)
	copy(msg[64:], body)
	out := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(out, uint32(len(msg)))
	return append(out, msg...)
}

// The server's frames are watched however the reads split them.
func TestWireObserves(t *testing.T) {
	t.Parallel()
	negotiate := frame(protoPlain, cmdNegotiate, 0, []byte{65, 0, 1, 0, 0x11, 0x03, 0, 0}) // dialect 0x0311
	create := frame(protoPlain, cmdCreate, flagSigned, make([]byte, 100))
	enc := frame(protoEncrypted, 0, 0, make([]byte, 300))
	stream := bytes.Join([][]byte{negotiate, frame(protoPlain, cmdRead, 0, make([]byte, 20000)), create, enc}, nil)
	for _, step := range []int{1, 3, 4, 5, 64, 70, 1000, len(stream)} {
		w := &wireConn{}
		for i := 0; i < len(stream); i += step {
			w.parse(stream[i:min(i+step, len(stream))])
		}
		if got := w.observed(); got != (observed{dialect: 0x0311, signed: true, encrypted: true}) {
			t.Errorf("pieces of %d: %+v", step, got)
		}
		if w.left != 0 || w.hn != 0 {
			t.Errorf("pieces of %d: parser left mid-frame (%d, %d)", step, w.left, w.hn)
		}
	}
	// Unsigned reads, plain messages: nothing more is claimed.
	w := &wireConn{}
	w.parse(frame(protoPlain, cmdRead, 0, make([]byte, 10)))
	if got := w.observed(); got != (observed{}) {
		t.Errorf("an unsigned read: %+v", got)
	}
}

// A length written alone goes out with the message that follows, in one
// write; a broken connection is noticed.
func TestWireWrites(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	w := newWireConn(a)
	got := make(chan []byte, 4)
	go func() {
		buf := make([]byte, 1<<20)
		for {
			n, err := b.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- append([]byte(nil), buf[:n]...)
		}
	}()
	msg := []byte("an SMB2 message")
	if n, err := w.Write([]byte{0, 0, 0, byte(len(msg))}); n != 4 || err != nil {
		t.Fatalf("length: %d %v", n, err)
	}
	if n, err := w.Write(msg); n != len(msg) || err != nil {
		t.Fatalf("message: %d %v", n, err)
	}
	if first := <-got; !bytes.Equal(first, append([]byte{0, 0, 0, byte(len(msg))}, msg...)) {
		t.Errorf("one write carried %q", first)
	}
	b.Close()
	if _, err := w.Write([]byte("x")); err == nil || !w.broken.Load() {
		t.Errorf("write to a closed pipe: %v, broken %v", err, w.broken.Load())
	}
	if _, err := w.Read(make([]byte, 1)); err != io.EOF && err != io.ErrClosedPipe && !w.broken.Load() {
		t.Errorf("read: %v", err)
	}
}

// The server's request for encryption (session or share flags) is seen,
// and refused only where the library has no keys: SMB 2.x, or a guest.
func TestWireCannotEncrypt(t *testing.T) {
	t.Parallel()
	negotiate := func(d uint16) []byte {
		return frame(protoPlain, cmdNegotiate, 0, []byte{65, 0, 1, 0, byte(d), byte(d >> 8), 0, 0})
	}
	setup := func(flags uint16) []byte {
		return frame(protoPlain, cmdSessionSetup, 0, []byte{9, 0, byte(flags), byte(flags >> 8)})
	}
	tree := func(flags uint32) []byte {
		b := make([]byte, 16)
		b[0] = 16
		binary.LittleEndian.PutUint32(b[4:], flags)
		return frame(protoPlain, cmdTreeConnect, 0, b)
	}
	failedSetup := setup(sessionEncryptData)
	binary.LittleEndian.PutUint32(failedSetup[4+8:], 0xC0000016) // STATUS_MORE_PROCESSING_REQUIRED
	for _, c := range []struct {
		name   string
		frames [][]byte
		want   string
	}{
		{"2.0.2, session encrypt", [][]byte{negotiate(0x0202), setup(sessionEncryptData)}, "the session be encrypted"},
		{"2.1, share encrypt", [][]byte{negotiate(0x0210), setup(0), tree(shareEncryptData)}, "the share be encrypted"},
		{"2.1, nothing asked", [][]byte{negotiate(0x0210), setup(0), tree(0x30)}, ""},
		{"3.0, session encrypt", [][]byte{negotiate(0x0300), setup(sessionEncryptData)}, ""},
		{"3.1.1, guest asked to encrypt", [][]byte{negotiate(0x0311), setup(sessionEncryptData | sessionIsGuest)}, "guest"},
		{"2.0.2, the flag only in a response still in progress", [][]byte{negotiate(0x0202), failedSetup}, ""},
	} {
		w := &wireConn{}
		for _, f := range c.frames {
			w.parse(f)
		}
		got := w.cannotEncrypt()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q", c.name, got)
		}
	}
}
