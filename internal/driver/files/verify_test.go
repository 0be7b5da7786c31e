package files

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// eventSink records the read-back events.
type eventSink struct {
	mu      sync.Mutex
	classes map[driver.Class]int
	msgs    []string
	bytes   int64
	causes  []time.Time
	// connects are the "connect" events (index 1 when uploads are
	// read back), kept apart.
	connects []connectEvent
}

// connectEvent is one "connect" event as the sink saw it.
type connectEvent struct {
	cause   time.Time
	latency time.Duration
	class   driver.Class
	err     error
}

func (s *eventSink) Event(event int, cause time.Time, latency time.Duration, in, out int64, class driver.Class, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if event == 1 {
		s.connects = append(s.connects, connectEvent{cause, latency, class, err})
		return
	}
	if s.classes == nil {
		s.classes = map[driver.Class]int{}
	}
	if event != 0 || latency <= 0 {
		s.msgs = append(s.msgs, "bad event")
	}
	s.classes[class]++
	s.bytes += in
	s.causes = append(s.causes, cause)
	if err != nil {
		s.msgs = append(s.msgs, err.Error())
	}
}

// tamperFS stores other bytes than it is given: every third write (create
// or write at an offset) has one byte flipped, on its way to the disk.
type tamperFS struct {
	fsys
	n        *int
	tampered *[]string
}

func (f tamperFS) tamper(name string, p []byte) []byte {
	*f.n++
	if *f.n%3 != 0 {
		return p
	}
	q := bytes.Clone(p)
	q[len(q)/2] ^= 0x81
	*f.tampered = append(*f.tampered, name)
	return q
}

func (f tamperFS) create(ctx context.Context, name string, p []byte) error {
	return f.fsys.create(ctx, name, f.tamper(name, p))
}

func (f tamperFS) writeAt(ctx context.Context, name string, off int64, p []byte) error {
	return f.fsys.writeAt(ctx, name, off, f.tamper(name, p))
}

// A local file system that stores other bytes than it was given: every
// upload and write is read back after its action, each tampered one is
// counted exactly once in class corrupt (the event verify), the actions
// themselves succeed, and the read-back is reported as untimed work.
func TestUploadsReadBack(t *testing.T) {
	dir := t.TempDir()
	c, acts := decode(t, "file://"+dir, "  population: {files: 10, size: 5000}\n", "{op: copy-up}", "{op: write, bytes: 1000}")
	if got := c.EventActions(); len(got) != 1 || got[0] != "verify" {
		t.Fatalf("EventActions %v", got)
	}
	sink := &eventSink{}
	c.Observe(sink)
	n, tampered := 0, []string{}
	c.testFS = func(fs fsys) fsys { return tamperFS{fs, &n, &tampered} }
	if err := c.Prepare(context.Background(), population(1)); err != nil {
		t.Fatal(err)
	}
	s := open(t, c, 0, 1)
	start := time.Now()
	for range 12 {
		for _, a := range acts {
			out, err := s.Do(context.Background(), a)
			if err != nil || out.Untimed <= 0 || out.BytesOut == 0 {
				t.Fatalf("%v: %+v %v", a, out, err)
			}
		}
	}
	if len(tampered) != 8 || sink.classes[driver.Corrupt] != 8 || sink.classes[driver.OK] != 16 || len(sink.msgs) != 8 {
		t.Fatalf("tampered %d: events %v %q", len(tampered), sink.classes, sink.msgs)
	}
	// 12 uploads of 5,000 bytes and 12 writes of 1,000 checked.
	if sink.bytes != 12*5000+12*1000 {
		t.Errorf("%d bytes read back", sink.bytes)
	}
	for i, m := range sink.msgs {
		if !strings.HasPrefix(m, "read back "+tampered[i]+": byte ") || !strings.HasSuffix(m, " differs from what was written") {
			t.Errorf("event %d: %q (tampered %s)", i, m, tampered[i])
		}
	}
	for _, cause := range sink.causes {
		if cause.Before(start) || cause.After(time.Now()) {
			t.Errorf("cause %v outside the run", cause)
		}
	}
	// The disk really holds other bytes: the first tampered write was the
	// second upload (writes alternate with uploads).
	if tampered[0] != uploadName(0, 1) {
		t.Fatalf("tampered %q", tampered)
	}
	b, _ := os.ReadFile(filepath.Join(dir, uploadName(0, 1)))
	if k := mismatch(contentKey(1, uploadKind, 0, 1), 0, b); len(b) != 5000 || k != 2500 {
		t.Errorf("upload 2 on disk: %d bytes, first difference at %d", len(b), k)
	}

	// verify_uploads: false: nothing read back, nothing untimed, the
	// corruption unseen.
	c2, acts2 := decode(t, "file://"+t.TempDir(), "  population: {files: 10, size: 5000}\n  verify_uploads: false\n", "{op: copy-up}")
	if got := c2.EventActions(); len(got) != 0 {
		t.Errorf("EventActions with verify_uploads: false: %v", got)
	}
	sink2 := &eventSink{}
	c2.Observe(sink2)
	c2.testFS = func(fs fsys) fsys { return tamperFS{fs, &n, &tampered} }
	if err := c2.Prepare(context.Background(), population(1)); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, c2, 0, 1)
	for range 6 {
		if out, err := s2.Do(context.Background(), acts2[0]); err != nil || out.Untimed != 0 {
			t.Fatalf("%+v %v", out, err)
		}
	}
	if len(sink2.classes) != 0 {
		t.Errorf("events with verify_uploads: false: %v", sink2.classes)
	}
}
