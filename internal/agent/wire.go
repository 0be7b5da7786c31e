package agent

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// The wire protocol between a controller and an agent.
//
// Authentication, before anything else: each side sends a 32-byte random
// nonce; each then proves it holds the shared token by sending
// HMAC-SHA256(token, role ‖ its peer's nonce ‖ its own nonce), which the
// other checks in constant time. The token itself never crosses the wire,
// and a recorded exchange cannot be replayed (fresh nonces). A side that
// fails the proof is refused and the connection closed.
//
// Then frames, both ways: a 4-byte big-endian length, the JSON message, and
// HMAC-SHA256(session key, sequence number ‖ JSON) where the session key is
// HMAC(token, "session" ‖ controller nonce ‖ agent nonce) and each side
// numbers its frames from 0. A frame that was changed, dropped, replayed or
// reordered fails the check and ends the connection. (Frames are not
// encrypted: for secrecy on an untrusted network use TLS as well.)

const (
	protocol    = "throng-agent/1"
	nonceSize   = 32
	macSize     = sha256.Size
	maxFrame    = 64 << 20
	authTimeout = 10 * time.Second
)

// ErrRefused is returned when the peer does not prove the token.
var ErrRefused = errors.New("the peer did not prove the shared token")

// Conn is an authenticated connection. Send and Recv may be called from
// two different goroutines (one each).
type Conn struct {
	c        net.Conn
	r        *bufio.Reader
	key      []byte
	wmu      sync.Mutex
	sendSeq  uint64
	recvSeq  uint64
	PeerAddr string
}

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// handshake runs the authentication on c. controller says which side this is.
func handshake(c net.Conn, token []byte, controller bool) (*Conn, error) {
	if len(token) < 16 {
		return nil, errors.New("the token is shorter than 16 bytes: use a long random secret")
	}
	c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	mine := make([]byte, nonceSize)
	if _, err := rand.Read(mine); err != nil {
		return nil, err
	}
	hello := append([]byte(protocol+"\n"), mine...)
	if _, err := c.Write(hello); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("no greeting: %w", err)
	}
	if line != protocol+"\n" {
		return nil, fmt.Errorf("the peer speaks %q, not %s", truncate(line, 40), protocol)
	}
	theirs := make([]byte, nonceSize)
	if _, err := io.ReadFull(r, theirs); err != nil {
		return nil, err
	}
	role, peerRole := []byte("controller"), []byte("agent")
	if !controller {
		role, peerRole = peerRole, role
	}
	if _, err := c.Write(mac(token, role, theirs, mine)); err != nil {
		return nil, err
	}
	proof := make([]byte, macSize)
	if _, err := io.ReadFull(r, proof); err != nil {
		return nil, fmt.Errorf("no proof of the token: %w", err)
	}
	if !hmac.Equal(proof, mac(token, peerRole, mine, theirs)) {
		return nil, ErrRefused
	}
	cn, an := mine, theirs
	if !controller {
		cn, an = theirs, mine
	}
	return &Conn{c: c, r: r, key: mac(token, []byte("session"), cn, an), PeerAddr: c.RemoteAddr().String()}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Send writes one message as an authenticated frame.
func (c *Conn) Send(m *Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(body) > maxFrame {
		return fmt.Errorf("message of %d bytes is over the %d-byte limit", len(body), maxFrame)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], c.sendSeq)
	c.sendSeq++
	frame := make([]byte, 4, 4+len(body)+macSize)
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	frame = append(frame, body...)
	frame = append(frame, mac(c.key, seq[:], body)...)
	c.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = c.c.Write(frame)
	return err
}

// Recv reads one frame, checks it and decodes it. A deadline of zero means
// none.
func (c *Conn) Recv(deadline time.Time) (*Message, error) {
	c.c.SetReadDeadline(deadline)
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes is over the limit", n)
	}
	buf := make([]byte, int(n)+macSize)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return nil, err
	}
	body, sum := buf[:n], buf[n:]
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], c.recvSeq)
	c.recvSeq++
	if !hmac.Equal(sum, mac(c.key, seq[:], body)) {
		return nil, errors.New("a frame failed its check (changed, replayed or out of order): connection dropped")
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("bad message: %w", err)
	}
	return &m, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
