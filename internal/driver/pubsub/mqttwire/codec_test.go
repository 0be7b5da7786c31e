package mqttwire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub/wirelimit"
)

type mqttLog struct{ got []string }

func (l *mqttLog) Publish(qos byte, dup bool, id uint16, prefix []byte, size int) {
	l.got = append(l.got, fmt.Sprintf("publish q%d dup=%v id=%d %q %d", qos, dup, id, prefix, size))
}
func (l *mqttLog) Packet(typ, flags byte, body []byte) {
	l.got = append(l.got, fmt.Sprintf("packet %d %x %x", typ, flags, body))
}

func classOf(err error) string { return driver.Classify(err).String() }

func TestMQTTParser(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 100)
	pub0, _, _ := PublishFrame(false, "a/b", 0, false, []byte("hello"))
	pub1, idAt, _ := PublishFrame(false, "a/b", 1, false, big)
	binary.BigEndian.PutUint16(pub1[idAt:], 513)
	pub5, _, _ := PublishFrame(true, "t", 2, true, []byte("xyz"))
	// A 5.0 PUBLISH with a property (subscription identifier 7).
	pub5p := packet(Publish<<4, append(appendString(nil, "t"), 2, 0x0b, 7, 'o', 'k'))
	tests := []struct {
		name string
		v5   bool
		in   []byte
		want []string
		err  bool
	}{
		{"publish qos0", false, pub0, []string{`publish q0 dup=false id=0 "hello" 5`}, false},
		{"publish qos1, long payload", false, pub1, []string{fmt.Sprintf("publish q1 dup=false id=513 %q 1000", big[:wirelimit.Prefix])}, false},
		{"publish v5 qos2 retain", true, pub5, []string{`publish q2 dup=false id=0 "xyz" 3`}, false},
		{"publish v5 with properties", true, pub5p, []string{`publish q0 dup=false id=0 "ok" 2`}, false},
		{"acks and pings", false, cat(Ack(nil, Puback, 1), Ack(nil, Pubrel, 2), []byte{Pingresp << 4, 0}),
			[]string{"packet 4 0 0001", "packet 6 2 0002", "packet 13 0 "}, false},
		{"connack", false, []byte{0x20, 2, 0, 5}, []string{"packet 2 0 0005"}, false},
		{"length too long", false, []byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}, nil, true},
		{"qos 3", false, []byte{0x36, 2, 0, 0}, nil, true},
		{"topic past the packet", false, []byte{0x30, 2, 0, 9}, nil, true},
	}
	for _, tt := range tests {
		for cut := 0; cut <= len(tt.in); cut++ {
			mp := Parser{V5: tt.v5}
			var log mqttLog
			err := mp.Feed(tt.in[:cut], &log)
			if err == nil {
				err = mp.Feed(tt.in[cut:], &log)
			}
			if (err != nil) != tt.err || (!tt.err && fmt.Sprint(log.got) != fmt.Sprint(tt.want)) {
				t.Fatalf("%s: feed cut at %d = %v, %v; want %v (error %v)", tt.name, cut, log.got, err, tt.want, tt.err)
			}
		}
	}
}

func TestMQTTPackets(t *testing.T) {
	c := ConnectPacket(ConnectOptions{ClientID: "throng-1", User: "u", Pass: "p", KeepAlive: 60, Clean: true})
	want := cat([]byte{0x10, 26}, appendString(nil, "MQTT"), []byte{4, 0xc2, 0, 60}, appendString(nil, "throng-1"), appendString(nil, "u"), appendString(nil, "p"))
	if !bytes.Equal(c, want) {
		t.Errorf("CONNECT 3.1.1 = %x, want %x", c, want)
	}
	c5 := ConnectPacket(ConnectOptions{V5: true, ClientID: "x", KeepAlive: 30, SessionExpiry: 3600})
	want5 := cat([]byte{0x10, 19}, appendString(nil, "MQTT"), []byte{5, 0, 0, 30, 5, 0x11, 0, 0, 0x0e, 0x10}, appendString(nil, "x"))
	if !bytes.Equal(c5, want5) {
		t.Errorf("CONNECT 5 = %x, want %x", c5, want5)
	}
	sub := SubscribePacket(false, 1, []string{"a/+", "b"}, 1)
	if want := cat([]byte{0x82, 12, 0, 1}, appendString(nil, "a/+"), []byte{1}, appendString(nil, "b"), []byte{1}); !bytes.Equal(sub, want) {
		t.Errorf("SUBSCRIBE = %x, want %x", sub, want)
	}
	frame, idAt, at := PublishFrame(true, "t/1", 1, false, []byte("abc"))
	if want := []byte{0x32, 11, 0, 3, 't', '/', '1', 0, 0, 0, 'a', 'b', 'c'}; !bytes.Equal(frame, want) || idAt != 7 || at != 10 {
		t.Errorf("PUBLISH 5 = %x (id at %d, payload at %d), want %x", frame, idAt, at, want)
	}
	// A long payload needs a 2-byte remaining length.
	frame, _, at = PublishFrame(false, "t", 0, false, make([]byte, 200))
	if frame[1] != 0x80|(203%128) || frame[2] != 1 || at != 6 {
		t.Errorf("PUBLISH 200 B header %x, payload at %d", frame[:6], at)
	}
}

func TestConnack(t *testing.T) {
	ca, err := ParseConnack(true, []byte{1, 0, 8, 0x13, 0, 30, 0x1f, 0, 2, 'h', 'i'})
	if err != nil || !ca.SessionPresent || ca.KeepAlive != 30 || ca.Reason != "hi" {
		t.Fatalf("ParseConnack 5 = %+v, %v", ca, err)
	}
	tests := []struct {
		v5   bool
		code byte
		want string
	}{
		{false, 4, "auth"}, {false, 5, "auth"}, {false, 3, "dial"}, {false, 1, "protocol"},
		{true, 0x86, "auth"}, {true, 0x87, "auth"}, {true, 0x89, "dial"}, {true, 0x97, "dial"}, {true, 0x84, "protocol"},
	}
	for _, tt := range tests {
		err := ConnackError(tt.v5, ConnAck{Code: tt.code})
		if got := classOf(err); got != tt.want || !strings.Contains(err.Error(), "refused") {
			t.Errorf("ConnackError(v5=%v, %#x) = %s (%v), want class %s", tt.v5, tt.code, got, err, tt.want)
		}
	}
	codes, err := ParseSuback(true, []byte{0, 9, 0, 1, 0x80}, 9)
	if err != nil || !bytes.Equal(codes, []byte{1, 0x80}) {
		t.Errorf("ParseSuback = %x, %v", codes, err)
	}
	if _, err := ParseSuback(false, []byte{0, 8, 0}, 9); err == nil {
		t.Error("ParseSuback accepted another packet's identifier")
	}
}

func TestVarint(t *testing.T) {
	for _, n := range []int{0, 127, 128, 16383, 16384, 2097151, 2097152, 268435455} {
		b := appendVarint(nil, n)
		got, w, ok := varint(b)
		if !ok || got != n || w != len(b) {
			t.Errorf("varint(appendVarint(%d)=%x) = %d, %d, %v", n, b, got, w, ok)
		}
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
