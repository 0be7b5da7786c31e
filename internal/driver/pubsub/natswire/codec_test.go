package natswire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub/wirelimit"
)

func classOf(err error) string { return driver.Classify(err).String() }

// natsLog records what a parser decoded, as text.
type natsLog struct{ got []string }

func (l *natsLog) Msg(sid uint32, prefix []byte, size int) {
	l.got = append(l.got, fmt.Sprintf("msg %d %q %d", sid, prefix, size))
}
func (l *natsLog) Ping()          { l.got = append(l.got, "ping") }
func (l *natsLog) Pong()          { l.got = append(l.got, "pong") }
func (l *natsLog) Err(msg []byte) { l.got = append(l.got, "err "+string(msg)) }

func TestNATSParser(t *testing.T) {
	long := strings.Repeat("x", 40)
	bigInfo := "INFO {\"connect_urls\":\"" + strings.Repeat("a", 3000) + "\"}\r\n"
	tests := []struct {
		name string
		in   string
		want []string
		err  bool
	}{
		{"msg", "MSG a.b 7 5\r\nhello\r\n", []string{`msg 7 "hello" 5`}, false},
		{"msg with reply", "MSG a.b 7 _INBOX.x 3\r\nabc\r\n", []string{`msg 7 "abc" 3`}, false},
		{"long payload keeps the header only", "MSG s 1 40\r\n" + long + "\r\n", []string{fmt.Sprintf("msg 1 %q 40", long[:wirelimit.Prefix])}, false},
		{"empty payload", "MSG s 2 0\r\n\r\nPING\r\n", []string{`msg 2 "" 0`, "ping"}, false},
		{"hmsg skips headers", "HMSG s 3 12 15\r\nNATS/1.0\r\n\r\nabc\r\n", []string{`msg 3 "abc" 3`}, false},
		{"control lines", "PING\r\nPONG\r\n+OK\r\n-ERR 'Authorization Violation'\r\n", []string{"ping", "pong", "err Authorization Violation"}, false},
		{"long INFO skipped", bigInfo + "PING\r\n", []string{"ping"}, false},
		{"unknown op", "FOO\r\n", nil, true},
		{"bad size", "MSG s 1 x\r\n", nil, true},
		{"too few args", "MSG s 1\r\n", nil, true},
		{"hmsg headers past total", "HMSG s 1 9 5\r\n", nil, true},
		{"long MSG line", "MSG " + strings.Repeat("s", 600) + " 1 1\r\nx\r\n", nil, true},
	}
	for _, tt := range tests {
		// Every way of cutting the input in two, and byte by byte.
		for cut := 0; cut <= len(tt.in); cut++ {
			var np Parser
			var log natsLog
			err := np.Feed([]byte(tt.in[:cut]), &log)
			if err == nil {
				err = np.Feed([]byte(tt.in[cut:]), &log)
			}
			if (err != nil) != tt.err || (!tt.err && fmt.Sprint(log.got) != fmt.Sprint(tt.want)) {
				t.Fatalf("%s: feed cut at %d = %v, %v; want %v (error %v)", tt.name, cut, log.got, err, tt.want, tt.err)
			}
		}
		var np Parser
		var log natsLog
		var err error
		for i := 0; i < len(tt.in) && err == nil; i++ {
			err = np.Feed([]byte{tt.in[i]}, &log)
		}
		if (err != nil) != tt.err || (!tt.err && fmt.Sprint(log.got) != fmt.Sprint(tt.want)) {
			t.Fatalf("%s: byte by byte = %v, %v; want %v", tt.name, log.got, err, tt.want)
		}
	}
}

func TestNATSFrames(t *testing.T) {
	payload := []byte("0123456789012345678901234567890123456789")
	frame, at := PubFrame("ipush.s3", payload)
	if want := "PUB ipush.s3 40\r\n"; string(frame[:at]) != want || !bytes.Equal(frame[at:at+40], payload) || string(frame[at+40:]) != "\r\n" {
		t.Fatalf("PubFrame = %q (at %d)", frame, at)
	}
	if got := string(Sub(nil, "a.*", 12)); got != "SUB a.* 12\r\n" {
		t.Errorf("Sub = %q", got)
	}
	if got := string(Unsub(nil, 12)); got != "UNSUB 12\r\n" {
		t.Errorf("Unsub = %q", got)
	}
	c := string(Connect("throng-1", `u"q`, "p", false))
	if !strings.HasPrefix(c, "CONNECT {") || !strings.HasSuffix(c, "}\r\n") || !strings.Contains(c, `"user":"u\"q"`) || !strings.Contains(c, `"verbose":false`) {
		t.Errorf("Connect = %q", c)
	}
	info, err := ParseInfo([]byte(`INFO {"server_id":"x","max_payload":1048576,"tls_required":true}` + "\r\n"))
	if err != nil || info.MaxPayload != 1048576 || !info.TLSRequired {
		t.Errorf("ParseInfo = %+v, %v", info, err)
	}
	if _, err := ParseInfo([]byte("HTTP/1.1 400 Bad Request\r\n")); err == nil {
		t.Error("ParseInfo accepted an HTTP answer")
	}
}

func TestNATSErrorClasses(t *testing.T) {
	for msg, want := range map[string]string{
		"Authorization Violation":      "auth",
		"maximum connections exceeded": "dial",
		"Slow Consumer":                "io",
		"Stale Connection":             "timeout",
		"Unknown Protocol Operation":   "protocol",
	} {
		if got := classOf(ServerError(msg)); got != want {
			t.Errorf("ServerError(%q) class %s, want %s", msg, got, want)
		}
	}
}
