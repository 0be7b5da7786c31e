package pubsub

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// Both brokers start on free ports, answer their protocol, take
// credentials and refuse connections past their limit.
func TestBoth(t *testing.T) {
	b, err := StartBoth("127.0.0.1:0", Options{Username: "u", Password: "p", MaxConnections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if u := b.URL(); !strings.HasPrefix(u, "nats://127.0.0.1:") || !strings.Contains(u, " mqtt://127.0.0.1:") {
		t.Fatalf("URL %q", u)
	}
	c, err := net.DialTimeout("tcp", b.NATS.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "INFO ") || !strings.Contains(line, `"auth_required":true`) {
		t.Fatalf("NATS INFO %q", line)
	}
	c.Write([]byte(`CONNECT {"user":"u","pass":"p","verbose":false}` + "\r\nPING\r\n"))
	if line, _ := r.ReadString('\n'); line != "PONG\r\n" {
		t.Fatalf("NATS with credentials: %q", line)
	}
	// MQTT: wrong password, code 4 or 5 (bad user name or password, not
	// authorized).
	m, err := net.DialTimeout("tcp", b.MQTT.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.SetDeadline(time.Now().Add(2 * time.Second))
	m.Write([]byte{0x10, 20, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xc2, 0, 10, 0, 1, 'x', 0, 1, 'u', 0, 1, 'x', 0})
	var ack [4]byte
	if _, err := m.Read(ack[:]); err != nil || ack[0] != 0x20 || (ack[3] != 4 && ack[3] != 5) {
		t.Errorf("MQTT CONNACK %x, %v; want code 4 or 5", ack, err)
	}
	if b.NATS.Clients() != 1 {
		t.Errorf("NATS clients %d", b.NATS.Clients())
	}
}

func TestStartOnATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, err := StartNATS(l.Addr().String(), Options{}); err == nil {
		n.Close()
		t.Error("NATS started on a taken port")
	}
	if m, err := StartMQTT(l.Addr().String(), Options{}); err == nil {
		m.Close()
		t.Error("MQTT started on a taken port")
	}
	if _, err := StartBoth("nonsense", Options{}); err == nil {
		t.Error("StartBoth accepted a bad address")
	}
}
