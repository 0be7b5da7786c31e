package cli

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// `throng serve capacity-truth` holds each request for the service time
// on one of its workers: 5 requests sent at once to 2 workers of 200 ms
// are served in 3 rounds, so the last answer comes after 600 ms (less a
// few ms: a hold corrects for the timer's lateness), and each after
// 195 ms at least. It stops on SIGTERM.
func TestServeCapacityTruth(t *testing.T) {
	cmd := exec.Command(binary, "serve", "capacity-truth", "--listen", "127.0.0.1:0", "--workers", "2", "--service", "200ms")
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	r := bufio.NewReader(pipe)
	line, err := r.ReadString('\n')
	f := strings.Fields(line) // serving capacity-truth at http://127.0.0.1:PORT (pid N); ...
	if err != nil || len(f) < 4 || f[1] != "capacity-truth" {
		t.Fatalf("serve capacity-truth: %q %v", line, err)
	}
	detail, _ := r.ReadString('\n')
	if !strings.Contains(detail, "2 workers, each holding a request 200ms: capacity 10 requests/s") {
		t.Errorf("second line %q", detail)
	}
	go io.Copy(io.Discard, r)
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, 5)
	for i := range took {
		wg.Go(func() {
			resp, err := http.Get(f[3] + "/")
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "x" {
				t.Errorf("answer %q", b)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	last := time.Duration(0)
	for _, d := range took {
		if d < 195*time.Millisecond {
			t.Errorf("a request answered after %s, sooner than the service time", d)
		}
		last = max(last, d)
	}
	if last < 595*time.Millisecond {
		t.Errorf("5 requests on 2 workers of 200 ms: the last after %s, want 600 ms or more", last)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("still serving 10 s after SIGTERM")
	}
}

// Bad input: exit 2, with what is wrong.
func TestServeCapacityTruthBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "capacity-truth", "--workers", "0"}, "--workers must be 1 or more"},
		{[]string{"serve", "capacity-truth", "--service", "-1s"}, "a positive duration"},
		{[]string{"serve", "web", "--workers", "3"}, "for capacity-truth only"},
		{[]string{"serve", "capacity-truh"}, "or capacity-truth"},
	} {
		code, _, errOut := throng(t, c.args...)
		if code != ExitBadInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
