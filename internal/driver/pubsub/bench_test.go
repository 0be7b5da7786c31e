package pubsub

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
)

// The per-message hot paths allocate nothing: a subscriber decoding,
// accounting and recording a delivery, and a publisher stamping and writing
// a message. Run with -benchmem:
//
//	go test ./internal/driver/pubsub -run '^$' -bench . -benchmem

// recSink records into a metrics.Recorder, as the engine's sink does.
type recSink struct{ rec *metrics.Recorder }

func (s recSink) Event(ev int, _ time.Time, lat time.Duration, bytes, _ int64, class driver.Class, err error) {
	if lat < 0 {
		s.rec.RecordUntimed(ev, 0, class, err)
		return
	}
	s.rec.Record(ev, 0, lat, lat, bytes, 0, class, err)
}

// subscribedEndpoint returns an endpoint subscribed to subject 0, with one
// stream on it, recording into a metrics.Recorder.
func subscribedEndpoint(proto string) (*endpoint, *stream) {
	c := &Config{Settings: Settings{Subjects: 1}, proto: proto, space: space{id: "bench", k: 1, n: 1}}
	r := newRun(c, recSink{metrics.NewRecorder(len(eventNames), nil)})
	st := r.reg.local(0, 0)
	ep := newEndpoint(r, 1, protocolOf(proto))
	ep.rq = request{user: 1, cov: coverage{subjects: []int32{0}}, filters: []string{"throng.0"}}
	ep.state = epSubscribing
	ep.ready()
	return ep, st
}

func benchDeliver(b *testing.B, proto string, size int) {
	ep, st := subscribedEndpoint(proto)
	payload := fillPayload(size, ep.r.tag, st.key)
	var frame []byte
	var at int
	if proto == NATS {
		frame = append([]byte("MSG throng.0 1 "), []byte(itoa(size)+"\r\n")...)
		at = len(frame)
		frame = append(append(frame, payload...), "\r\n"...)
	} else {
		frame, _, at = protocolOf(proto).publishFrame("throng/0", 0, false, payload)
	}
	// 32 messages per read, as a busy loop sees them.
	const batch = 32
	buf := make([]byte, 0, batch*len(frame))
	for range batch {
		buf = append(buf, frame...)
	}
	now := time.Now().UnixNano()
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	var seq uint64
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		for j := range batch {
			seq++
			putSeqTime(buf[j*len(frame)+at:], seq, now-1000)
		}
		st.sent.Store(seq)
		if err := ep.feed(buf, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if t := ep.sub.tracks[0]; t.got != seq || t.dup != 0 {
		b.Fatalf("accounted %d of %d (dup %d)", t.got, seq, t.dup)
	}
}

func BenchmarkDeliverNATS100(b *testing.B)  { benchDeliver(b, NATS, 100) }
func BenchmarkDeliverNATS1000(b *testing.B) { benchDeliver(b, NATS, 1000) }
func BenchmarkDeliverMQTT100(b *testing.B)  { benchDeliver(b, MQTT, 100) }
func BenchmarkDeliverMQTT5(b *testing.B)    { benchDeliver(b, MQTT5, 100) }

// nullConn is a connection that takes every write.
type nullConn struct{ net.Conn }

func (nullConn) Write(p []byte) (int, error)      { return len(p), nil }
func (nullConn) SetWriteDeadline(time.Time) error { return nil }
func (nullConn) Close() error                     { return nil }

func benchPublish(b *testing.B, proto string) {
	c := &Config{Settings: Settings{Subjects: 5, Subject: "throng.{n}", Timeout: 1e9}, proto: proto}
	s := &session{c: c, r: newRun(c, nil), u: driver.User{ID: 3}, nc: nullConn{}, ep: newEndpoint(nil, 3, protocolOf(proto))}
	act := &action{subject: ownSubject, size: 100}
	ctx := context.Background()
	if _, err := s.Do(ctx, act); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Do(ctx, act); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublishNATS(b *testing.B) { benchPublish(b, NATS) }
func BenchmarkPublishMQTT(b *testing.B) { benchPublish(b, MQTT) }

// TestHotPathsDoNotAllocate keeps the benchmarks' promise in the test run.
func TestHotPathsDoNotAllocate(t *testing.T) {
	for _, bench := range []func(*testing.B){BenchmarkDeliverNATS100, BenchmarkDeliverMQTT5, BenchmarkPublishNATS} {
		r := testing.Benchmark(bench)
		if r.N == 0 || r.AllocsPerOp() != 0 {
			t.Errorf("%d allocations per operation (N=%d)", r.AllocsPerOp(), r.N)
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
