package pubsub

import (
	"fmt"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/scenario"
)

// TestDecode: each problem of a block or an action is reported, positioned,
// with a message a user can act on; nothing secret is echoed.
func TestDecode(t *testing.T) {
	t.Setenv("PUBSUB_DECODE_PASS", "hunter2")
	tests := []struct {
		name, block, target, action string
		want                        string // "" when valid
	}{
		{"defaults", "{}", "nats://127.0.0.1:4222", "", ""},
		{"embedded picks nats", "{}", "nats://127.0.0.1:1 mqtt://127.0.0.1:2", "", ""},
		{"embedded mqtt", "{protocol: mqtt}", "nats://127.0.0.1:1 mqtt://127.0.0.1:2", "", ""},
		{"mqtt5 over mqtts", "{protocol: mqtt5}", "mqtts://127.0.0.1", "", ""},
		{"protocol mismatch", "{protocol: mqtt}", "nats://127.0.0.1:4222", "", "protocol mqtt does not match the target"},
		{"unknown protocol", "{protocol: amqp}", "nats://127.0.0.1:4222", "", `protocol "amqp"`},
		{"http target", "{}", "http://127.0.0.1:9", "", "needs a nats://"},
		{"credentials in the URL", "{}", "mqtt://u:secretpw@127.0.0.1", "", "holds credentials"},
		{"unknown key", "{subjectz: 3}", "nats://127.0.0.1", "", "subjectz"},
		{"pattern without {n}", "{subjects: 3, subject: a.b}", "nats://127.0.0.1", "", "needs {n}"},
		{"wildcard in a subject", "{subject: 'a.>'}", "nats://127.0.0.1", "", "no wildcards"},
		{"bad subscribe mode", "{subscribe: {subscribers: some}}", "nats://127.0.0.1", "", `subscribe "some"`},
		{"wildcard needs a token", "{subjects: 2, subject: 'a.x{n}', subscribe: {s: wildcard}}", "nats://127.0.0.1", "", "whole token"},
		{"qos 3", "{qos: 3}", "mqtt://127.0.0.1", "", "qos is 3"},
		{"literal password", "{password: hunter2}", "nats://127.0.0.1", "", "never the secret itself"},
		{"password from env", `{username: bench, password: "${PUBSUB_DECODE_PASS}"}`, "nats://127.0.0.1", "", ""},
		{"unset variable", `{password: "${PUBSUB_DECODE_UNSET}"}`, "nats://127.0.0.1", "", "is not set"},
		{"missing ca file", "{tls: {ca_file: /nonexistent.pem}}", "mqtts://127.0.0.1", "", "ca_file"},
		{"readers", "{readers: 100}", "nats://127.0.0.1", "", "readers is 100"},
		{"action too small", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, size: 10B}", "size 10B"},
		{"action subject out of range", "{subjects: 2}", "nats://127.0.0.1", "{name: p, rate: 1/s, subject: 2}", `subject "2"`},
		{"nats has no qos", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, qos: 1}", "no QoS"},
		{"unknown op", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: unsubscribe}", `op "unsubscribe"`},
		{"subscribe needs a subject", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe}", "op subscribe needs a subject"},
		{"subscribe needs a subject, positioned", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe}", "t.yaml:4:"},
		{"subscribe subject out of range", "{subjects: 2}", "mqtt://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: 2}", `subject "2"`},
		{"subscribe bad subject is positioned", "{subjects: 2}", "mqtt://127.0.0.1", "{name: p, rate: 1/s, op: subscribe,\n      subject: x}", "t.yaml:5:"},
		{"subscribe to a subject", "{subjects: 2}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: 1}", ""},
		{"subscribe own", "{}", "mqtt://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: own}", ""},
		{"subscribe all", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: all}", ""},
		{"subscribe wildcard", "{subjects: 3}", "mqtt://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: wildcard}", ""},
		{"subscribe wildcard needs a token", "{subjects: 2, subject: 'a.x{n}'}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: wildcard}", "whole token"},
		{"unknown key on a subscribe", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: subscribe, subject: 0, topic: x}", "topic"},
		{"unknown op is positioned", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: reconnect}", `t.yaml:4:`},
		{"unknown op lists the ops", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, op: reconnect}", "want publish, connect, disconnect or subscribe"},
		{"connect op", "{}", "mqtt://127.0.0.1", "{name: c, rate: 1/s, op: connect}", ""},
		{"disconnect op", "{}", "nats://127.0.0.1", "{name: d, rate: 1/s, op: disconnect}", ""},
		{"action named like an event", "{}", "nats://127.0.0.1", "{name: connect, rate: 1/s, op: connect}", `t.yaml:4:`},
		{"action named like an event says why", "{}", "nats://127.0.0.1", "{name: deliver, rate: 1/s}", `also the driver's event "deliver"`},
		{"unknown key on a connect", "{}", "nats://127.0.0.1", "{name: c, rate: 1/s, op: connect, topic: x}", "topic"},
		{"unknown action key", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, topic: x}", "topic"},
		{"mqtt qos on an action", "{}", "mqtt://127.0.0.1", "{name: p, rate: 1/s, qos: 2, retain: true}", ""},
		{"uniform sizes", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, distribution: uniform, min: 100B, max: 1KB}", ""},
		{"exponential sizes", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, size: 1KB, distribution: exponential}", ""},
		{"uniform without max", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, distribution: uniform, min: 100B}", "min < max"},
		{"min below the header", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, distribution: uniform, min: 8B, max: 1KB}", "min < max"},
		{"max without a distribution", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, max: 1KB}", "need a distribution"},
		{"unknown distribution", "{}", "nats://127.0.0.1", "{name: p, rate: 1/s, distribution: normal}", `distribution "normal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := tt.action
			if action == "" {
				action = "{name: publish, rate: 1/s}"
			}
			src := "phases: {steady: 1s}\ngroups:\n  - {name: s, users: 1}\n  - {name: p, users: 1, model: open, actions: [" + action + "]}\npubsub: " + tt.block + "\n"
			s, err := scenario.Decode("t.yaml", []byte(src), []string{Name})
			var errs []error
			if err != nil {
				errs = append(errs, err)
			} else {
				c, derrs := Decode(s.DriverConfig, tt.target)
				errs = append(errs, derrs...)
				if len(derrs) == 0 {
					_, cerrs := c.Compile(s.Actions[0])
					errs = append(errs, cerrs...)
				}
			}
			got := fmt.Sprint(errs)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("Decode(%s) = %v, want no error", tt.block, errs)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("Decode(%s, %s) = %v, want %q", tt.block, tt.action, got, tt.want)
			}
			if strings.Contains(got, "hunter2") || strings.Contains(got, "secretpw") {
				t.Errorf("a secret in the message: %s", got)
			}
			if tt.want != "" && strings.Contains(tt.block, "{n}") && !strings.Contains(got, "t.yaml:") {
				t.Errorf("not positioned: %s", got)
			}
		})
	}
}

func TestDescribeHasNoSecrets(t *testing.T) {
	t.Setenv("PUBSUB_DECODE_PASS", "hunter2")
	c, _ := setup(t, `{username: bench, password: "${PUBSUB_DECODE_PASS}"}`, "mqtt://127.0.0.1")
	d := fmt.Sprint(c.Describe())
	if strings.Contains(d, "hunter2") || strings.Contains(d, "bench") || !strings.Contains(d, "auth:true") || !strings.Contains(d, "protocol:mqtt") {
		t.Errorf("Describe() = %s", d)
	}
}
