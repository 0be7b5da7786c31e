package scenario

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic and
// every error it returns must be a positioned scenario error.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		good,
		"users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n",
		"users: -1\nphases: {steady: 30}\n",
		"a: &x [*x]\n",
		"<<: {users: 1}\n",
		"users: !!str 5\n",
		"? users\n: 3\n",
		"actions:\n  - <<: [*a, *b]\n",
		"users: 1e99\nspeedup: .nan\n",
		"phases: {ramp_up: {every: 1s, group: 0, pause: -1s}}\n",
		"{\"users\": 3, \"model\": \"open\", \"open\": {\"rate\": \"12/8h\"}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz.yaml", src, []string{"web"})
		if err == nil {
			if s == nil {
				t.Fatal("nil scenario without error")
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("error is %T, not Errors: %v", err, err)
		}
		for _, e := range es {
			var se *Error
			if !errors.As(e, &se) || se.File != "fuzz.yaml" || se.Msg == "" {
				t.Fatalf("not a scenario error: %#v", e)
			}
			if strings.Contains(se.Msg, "internal error") {
				t.Fatalf("the decoder panicked: %v", se)
			}
		}
	})
}
