package testenv

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run the real mosquitto and nats-server; they skip when they
// are not installed (and fail instead when CI is set, see RequireBinary).

// mqttConnect connects with an MQTT 3.1.1 CONNECT and returns the CONNACK's
// return code.
func mqttConnect(t *testing.T, addr, user, pass string) byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	str := func(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }
	body := append(str("MQTT"), 4, 0x02, 0, 10)
	if user != "" {
		body[7] |= 0xc0
	}
	body = append(body, str("t-"+strconv.Itoa(int(time.Now().UnixNano()%1e6)))...)
	if user != "" {
		body = append(append(body, str(user)...), str(pass)...)
	}
	if _, err := c.Write(append([]byte{0x10, byte(len(body))}, body...)); err != nil {
		t.Fatal(err)
	}
	var ack [4]byte
	if _, err := c.Read(ack[:]); err != nil {
		t.Fatalf("no CONNACK: %v", err)
	}
	return ack[3]
}

func noFileLimit(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(line)
			n, _ := strconv.Atoi(f[3])
			return n
		}
	}
	t.Fatal("no Max open files in limits")
	return 0
}

func TestMosquitto(t *testing.T) {
	t.Parallel()
	b := Mosquitto(t, MosquittoOptions{})
	if b.Name != "mosquitto" || b.URL != "mqtt://"+b.Addr || !strings.HasPrefix(b.Addr, "127.0.0.1:") || !b.Alive() {
		t.Fatalf("Name %q, Addr %q, URL %q, alive %v", b.Name, b.Addr, b.URL, b.Alive())
	}
	if code := mqttConnect(t, b.Addr, "", ""); code != 0 {
		t.Errorf("anonymous CONNECT: code %d", code)
	}
	if n := noFileLimit(t, b.PID); n < 10000 {
		t.Errorf("open-file limit %d: too low for thousands of subscribers", n)
	}
	// Restart on the same port: a new process, the same address.
	addr, pid := b.Addr, b.PID
	if err := b.Restart(t.Context(), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if b.Addr != addr || b.PID == pid || mqttConnect(t, b.Addr, "", "") != 0 {
		t.Errorf("after Restart: %s pid %d (was %s pid %d)", b.Addr, b.PID, addr, pid)
	}
	dir := b.Dir
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dir %s left after Stop", dir)
	}
}

func TestMosquittoPassword(t *testing.T) {
	t.Parallel()
	b := Mosquitto(t, MosquittoOptions{Username: "bench", Password: "s3 cret"})
	for _, c := range []struct {
		user, pass string
		want       byte
	}{{"bench", "wrong", 5}, {"", "", 5}, {"bench", "s3 cret", 0}} {
		if code := mqttConnect(t, b.Addr, c.user, c.pass); code != c.want {
			t.Errorf("CONNECT as %q/%q: code %d, want %d", c.user, c.pass, code, c.want)
		}
	}
}

// TestMosquittoLimit: past max_connections, mosquitto closes new
// connections at once. (mosquitto 2.0.11 miscounts clients that
// disconnected, here the readiness probe, so the limit lets one more in:
// of three extra connections, at least one is closed.)
func TestMosquittoLimit(t *testing.T) {
	t.Parallel()
	b := Mosquitto(t, MosquittoOptions{MaxConnections: 1})
	closed := 0
	for range 4 {
		c, err := net.Dial("tcp", b.Addr)
		if err != nil {
			closed++
			continue
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	if closed == 0 {
		t.Error("no connection past max_connections was closed")
	}
}

func TestNATSServer(t *testing.T) {
	t.Parallel()
	b := NATSServer(t, NATSServerOptions{Username: "bench", Password: "p\"w"})
	if b.Name != "nats-server" || b.URL != "nats://"+b.Addr || !b.Alive() {
		t.Fatalf("Name %q, Addr %q, URL %q", b.Name, b.Addr, b.URL)
	}
	hello := func(user, pass string) string {
		c, err := net.DialTimeout("tcp", b.Addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		r := bufio.NewReader(c)
		if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "INFO ") {
			t.Fatalf("first line %q", line)
		}
		c.Write([]byte(`CONNECT {"verbose":false,"user":"` + user + `","pass":"` + pass + `"}` + "\r\nPING\r\n"))
		line, _ := r.ReadString('\n')
		return strings.TrimSpace(line)
	}
	if got := hello("bench", `p\"w`); got != "PONG" {
		t.Errorf("right password: %q", got)
	}
	if got := hello("bench", "x"); !strings.Contains(got, "Authorization Violation") {
		t.Errorf("wrong password: %q", got)
	}
	if n := noFileLimit(t, b.PID); n < 10000 {
		t.Errorf("open-file limit %d", n)
	}
	addr := b.Addr
	if err := b.Restart(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if b.Addr != addr || hello("bench", `p\"w`) != "PONG" {
		t.Errorf("after Restart: %s", b.Addr)
	}
}

// TestNATSServerPortTaken: a foreign listener on the asked port is not
// taken for the server.
func TestNATSServerPortTaken(t *testing.T) {
	t.Parallel()
	RequireBinary(t, "nats-server", NATSServerPaths...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	b, err := StartNATSServer(t.Context(), NATSServerOptions{Port: port})
	if err == nil {
		b.Stop()
		t.Fatal("started on a taken port")
	}
	if !errors.Is(err, errAddrInUse) {
		t.Errorf("error %v, want address in use", err)
	}
}
