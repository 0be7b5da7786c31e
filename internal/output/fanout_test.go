package output

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// countSink counts what it gets.
type countSink struct{ n atomic.Uint64 }

func (c *countSink) Write(context.Context, *Interval) error { c.n.Add(1); return nil }
func (c *countSink) Close(context.Context) error            { return nil }

// blockSink never returns from Write until the test ends (it ignores ctx,
// as a badly written sink would).
type blockSink struct{ release chan struct{} }

func (b *blockSink) Write(context.Context, *Interval) error { <-b.release; return nil }
func (b *blockSink) Close(context.Context) error            { return nil }

// failSink fails its third Write.
type failSink struct{ n int }

func (f *failSink) Write(context.Context, *Interval) error {
	f.n++
	if f.n == 3 {
		return errors.New("receiver said no")
	}
	return nil
}
func (f *failSink) Close(context.Context) error { return nil }

// A blocked output and a failing one are dropped and counted; Send never
// waits for them and the healthy output gets every interval.
func TestFanoutDropsSlowAndFailing(t *testing.T) {
	f := NewFanout(4)
	good, block, fail := &countSink{}, &blockSink{release: make(chan struct{})}, &failSink{}
	defer close(block.release)
	f.Add("good", good)
	f.Add("block", block)
	f.Add("fail", fail)
	iv := NewInterval(0, t0, names, knownInterval(0, "steady", []uint64{100}, 0))
	const n = 100
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range n {
			f.Send(iv)
			time.Sleep(time.Millisecond) // the healthy output keeps up
		}
	}()
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		t.Fatalf("Send blocked: %d intervals not sent in 5 s", n)
	}
	recs := f.Close(500 * time.Millisecond)
	if len(recs) != 3 {
		t.Fatal(recs)
	}
	g, b, e := recs[0], recs[1], recs[2]
	if g.Dropped || g.Delivered != n || g.Lost != 0 || good.n.Load() != n {
		t.Errorf("healthy output: %+v (got %d)", g, good.n.Load())
	}
	if !b.Dropped || b.Delivered != 0 || b.Lost != n || b.Reason != "fell 4 intervals behind" {
		t.Errorf("blocked output: %+v", b)
	}
	if !e.Dropped || e.Delivered != 2 || e.Lost != n-2 || e.Reason != "failed: receiver said no" {
		t.Errorf("failing output: %+v", e)
	}
}

// Close gives up on an output that does not drain in time, and counts
// what it did not send.
func TestFanoutCloseTimeout(t *testing.T) {
	f := NewFanout(8)
	block := &blockSink{release: make(chan struct{})}
	defer close(block.release)
	f.Add("block", block)
	iv := NewInterval(0, t0, names, knownInterval(0, "steady", []uint64{100}, 0))
	for range 3 {
		f.Send(iv)
	}
	start := time.Now()
	recs := f.Close(200 * time.Millisecond)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s", d)
	}
	if r := recs[0]; !r.Dropped || r.Lost != 3 || r.Delivered != 0 {
		t.Errorf("%+v", r)
	}
}
