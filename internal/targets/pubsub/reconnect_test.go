package pubsub

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// A client with a clean session that disconnects and at once connects
// again with the same identifier keeps the subscription it makes on the
// new connection: the old connection's clean-up must not remove it.
func TestReconnectKeepsNewSubscription(t *testing.T) {
	m, err := StartMQTT("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pub := mqttDial(t, m.Addr(), "publisher")
	defer pub.Close()
	const rounds = 300
	lost := 0
	for i := range rounds {
		old := mqttDial(t, m.Addr(), "device")
		old.subscribe(t, "t/device")
		old.Write([]byte{0xe0, 0}) // DISCONNECT
		old.Close()
		c := mqttDial(t, m.Addr(), "device")
		c.subscribe(t, "t/device")
		payload := fmt.Sprintf("m%d", i)
		pub.publish(t, "t/device", payload)
		if !c.receive(payload, time.Second) {
			lost++
		}
		c.Close()
	}
	if lost > 0 {
		t.Errorf("%d of %d messages lost to a reconnected subscriber", lost, rounds)
	}
	// Clients that leave for good leave nothing in the hook.
	for i := range 50 {
		c := mqttDial(t, m.Addr(), fmt.Sprintf("gone-%d", i))
		c.Write([]byte{0xe0, 0})
		c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for m.takeover.pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := m.takeover.pending(); n != 0 {
		t.Errorf("the takeover hook still tracks %d sessions", n)
	}
}

type mqttTestConn struct {
	net.Conn
	r *bufio.Reader
}

func mqttString(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

// packet frames a control packet (remaining length < 128).
func packet(kind byte, body []byte) []byte { return append([]byte{kind, byte(len(body))}, body...) }

// mqttDial connects with MQTT 3.1.1, a clean session, and reads CONNACK.
func mqttDial(t *testing.T, addr, id string) *mqttTestConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &mqttTestConn{Conn: nc, r: bufio.NewReader(nc)}
	body := append(mqttString("MQTT"), 4, 0x02, 0, 60)
	body = append(body, mqttString(id)...)
	c.Write(packet(0x10, body))
	if kind, _ := c.read(t, time.Second); kind != 0x20 {
		t.Fatalf("CONNACK: packet type %#x", kind)
	}
	return c
}

func (c *mqttTestConn) subscribe(t *testing.T, topic string) {
	t.Helper()
	body := append([]byte{0, 1}, mqttString(topic)...)
	c.Write(packet(0x82, append(body, 0)))
	if kind, _ := c.read(t, time.Second); kind != 0x90 {
		t.Fatalf("SUBACK: packet type %#x", kind)
	}
}

func (c *mqttTestConn) publish(t *testing.T, topic, payload string) {
	t.Helper()
	if _, err := c.Write(packet(0x30, append(mqttString(topic), payload...))); err != nil {
		t.Fatal(err)
	}
}

// receive reports whether a PUBLISH with payload arrives within d.
func (c *mqttTestConn) receive(payload string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		c.SetReadDeadline(deadline)
		kind, body, err := c.readPacket()
		if err != nil {
			return false
		}
		if kind&0xf0 == 0x30 && bytes.HasSuffix(body, []byte(payload)) {
			return true
		}
	}
}

func (c *mqttTestConn) read(t *testing.T, d time.Duration) (byte, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	kind, body, err := c.readPacket()
	if err != nil {
		t.Fatal(err)
	}
	return kind, body
}

func (c *mqttTestConn) readPacket() (byte, []byte, error) {
	kind, err := c.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, shift := 0, 0
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
		shift += 7
	}
	body := make([]byte, n)
	_, err = io.ReadFull(c.r, body)
	return kind, body, err
}
