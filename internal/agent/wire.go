package agent

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// The wire protocol between a controller and an agent.
//
// Transport: TLS 1.3 (tls.go), or plaintext when both sides are told so
// (throng agent --insecure, throng run --agents-insecure).
//
// Authentication, before anything else: each side sends its greeting
// line and a 32-byte random nonce; each then proves it holds the shared
// token by sending HMAC-SHA256(token, role ‖ its peer's nonce ‖ its own
// nonce ‖ binding), which the other checks in constant time. binding is a
// value exported from the TLS session (empty in plaintext): a man in the
// middle, who has a different session with each side, cannot pass the
// proofs on. The token itself never crosses the wire, and a recorded
// exchange cannot be replayed (fresh nonces). A side that fails the proof
// is refused and the connection closed.
//
// Then frames, both ways: a 4-byte big-endian length, the JSON message, and
// HMAC-SHA256(session key, sequence number ‖ JSON) where the session key is
// HMAC(token, "session" ‖ controller nonce ‖ agent nonce ‖ binding) and each
// side numbers its frames from 0. A frame that was changed, dropped,
// replayed or reordered fails the check and ends the connection. (Inside
// TLS the records are already authenticated; the frames' own check keeps
// one protocol for both transports.)
//
// Every read is bounded: the greeting to maxGreeting bytes (a peer that
// sends more without a line break is refused after at most the reader's
// 4 KiB buffer), the nonce and proof to their sizes, a frame to maxFrame,
// its buffer growing only as its bytes arrive. The caller bounds the time.

const (
	// protocol names this version of the protocol in the greeting. Version
	// 2 carries settings by key path (PlanRequest.Settings) where version 1
	// carried command-line flags; version 3 keeps a session open for
	// several plans, one after another (the controller pinging between
	// them), and prepares a data set once for the plans that keep it
	// (KindPrepare, PlanRequest.KeepPopulation), where version 2 ran one
	// plan per session. A peer of another version is refused before
	// anything else, saying so (readGreeting).
	protocol     = protocolName + "3"
	protocolName = "throng-agent/"
	nonceSize    = 32
	macSize      = sha256.Size
	maxFrame     = 64 << 20
	maxGreeting  = 256
	// refusedPrefix starts the line an agent sends, in plaintext, to a
	// controller that must be told why before the connection closes.
	refusedPrefix = protocol + " refused: "
)

// ErrRefused is returned when the peer does not prove the shared token.
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

// handshake runs the authentication on c, a *tls.Conn after its handshake
// or a plaintext connection. controller says which side this is. The
// caller sets c's deadline.
func handshake(c net.Conn, token []byte, controller bool) (*Conn, error) {
	if len(token) < 16 {
		return nil, errors.New("the token is shorter than 16 bytes: use a long random secret")
	}
	bind, err := binding(c)
	if err != nil {
		return nil, fmt.Errorf("TLS exporter: %w", err)
	}
	mine := make([]byte, nonceSize)
	if _, err := rand.Read(mine); err != nil {
		return nil, err
	}
	hello := append([]byte(protocol+"\n"), mine...)
	if _, err := c.Write(hello); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	if err := readGreeting(r); err != nil {
		return nil, err
	}
	theirs := make([]byte, nonceSize)
	if _, err := io.ReadFull(r, theirs); err != nil {
		return nil, err
	}
	role, peerRole := []byte("controller"), []byte("agent")
	if !controller {
		role, peerRole = peerRole, role
	}
	if _, err := c.Write(mac(token, role, theirs, mine, bind)); err != nil {
		return nil, err
	}
	proof := make([]byte, macSize)
	if _, err := io.ReadFull(r, proof); err != nil {
		return nil, fmt.Errorf("no proof of the token: %w", err)
	}
	if !hmac.Equal(proof, mac(token, peerRole, mine, theirs, bind)) {
		return nil, ErrRefused
	}
	cn, an := mine, theirs
	if !controller {
		cn, an = theirs, mine
	}
	return &Conn{c: c, r: r, key: mac(token, []byte("session"), cn, an, bind), PeerAddr: c.RemoteAddr().String()}, nil
}

// readGreeting reads the peer's greeting line, at most maxGreeting bytes
// of it (and never more than r's buffer), and checks it.
func readGreeting(r *bufio.Reader) error {
	if b, err := r.Peek(1); err == nil && b[0] == 0x16 {
		return errors.New("the peer speaks TLS, and this side runs without it (throng agent --insecure): start both sides with TLS, or both without")
	}
	line, err := r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > maxGreeting:
		return fmt.Errorf("the peer's greeting is not %s: more than %d bytes without a line break", protocol, maxGreeting)
	case err != nil:
		return fmt.Errorf("no greeting: %w", err)
	}
	s := string(line)
	if why, ok := strings.CutPrefix(s, refusedPrefix); ok {
		return fmt.Errorf("the agent refused: %s", strings.TrimSpace(why))
	}
	if version, ok := strings.CutPrefix(strings.TrimSpace(s), protocolName); ok && s != protocol+"\n" && len(version) < 16 {
		return fmt.Errorf("the peer speaks %s%s and this side %s, another version of the agent protocol: run the same release of throng on the controller and on every agent",
			protocolName, version, protocol)
	}
	if s != protocol+"\n" {
		return fmt.Errorf("the peer speaks %q, not %s", truncate(s, 40), protocol)
	}
	return nil
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
		return nil, fmt.Errorf("frame of %d bytes is over the limit of %d", n, maxFrame)
	}
	// The buffer grows as the bytes arrive, never to what the header
	// claims before they do.
	var buf bytes.Buffer
	buf.Grow(int(min(n, 64<<10)) + macSize)
	if _, err := io.CopyN(&buf, c.r, int64(n)+macSize); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	body, sum := buf.Bytes()[:n], buf.Bytes()[n:]
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
