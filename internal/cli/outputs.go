package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	liveout "github.com/throng-io/throng/internal/output"
	"github.com/throng-io/throng/internal/result"
)

// outputsCloseTimeout bounds how long the outputs may take, together, to
// send what they hold after the run's last interval.
const outputsCloseTimeout = 5 * time.Second

// liveOutputs are a run's --prometheus page and --output sinks, fed every
// interval through a liveout.Fanout: none of them can slow or stop the run.
type liveOutputs struct {
	fan    *liveout.Fanout
	srv    *http.Server
	url    string
	linger time.Duration
	names  []string
	stderr io.Writer

	mu     sync.Mutex
	starts map[int]time.Time
}

// checkOutputFlags reads --output values and checks the flags that go
// with them (bad input otherwise).
func checkOutputFlags(f *runFlags) ([]liveout.Spec, error) {
	var specs []liveout.Spec
	for _, v := range f.outputs {
		s, err := liveout.ParseSpec(v)
		if err != nil {
			return nil, badInput(fmt.Errorf("--output %w", err))
		}
		specs = append(specs, s)
	}
	if f.linger != 0 && f.prometheus == "" {
		return nil, badInput(errors.New("--prometheus-linger needs --prometheus"))
	}
	if f.linger < 0 {
		return nil, badInput(fmt.Errorf("--prometheus-linger %s: want a duration of 0 or more", f.linger))
	}
	return specs, nil
}

// startOutputs opens the outputs of a run described by meta: the
// Prometheus page (listening before the run starts) and each sink. A sink
// that cannot be opened (a CSV file that cannot be created) stops the run
// before it starts (exit 4). It returns nil when there is no output.
// ln is the listener of --prometheus, taken before the run was prepared
// (nil without it).
func startOutputs(ctx context.Context, f *runFlags, ln net.Listener, specs []liveout.Spec, meta *result.Meta, stderr io.Writer) (*liveOutputs, error) {
	if f.prometheus == "" && len(specs) == 0 {
		return nil, nil
	}
	o := &liveOutputs{fan: liveout.NewFanout(0), linger: f.linger, names: meta.Actions, stderr: stderr, starts: map[int]time.Time{}}
	run := liveout.RunOf(meta)
	if f.prometheus != "" {
		exp := liveout.NewExporter(run)
		mux := http.NewServeMux()
		mux.Handle("/metrics", exp.Handler())
		o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go o.srv.Serve(ln)
		o.url = fmt.Sprintf("http://%s/metrics", ln.Addr())
		o.fan.Add("prometheus="+ln.Addr().String(), exp)
		fmt.Fprintf(stderr, "throng: live metrics at %s\n", o.url)
	}
	for _, s := range specs {
		sink, err := liveout.Open(ctx, s, run)
		if err != nil {
			o.fan.Close(time.Second)
			o.stopServer()
			return nil, failure(fmt.Errorf("--output %s: %w", s.Name(), err))
		}
		o.fan.Add(s.Name(), sink)
	}
	return o, nil
}

// repetitionStart records when repetition rep started (the intervals'
// wall-clock times count from it).
func (o *liveOutputs) repetitionStart(rep int, at time.Time) {
	o.mu.Lock()
	o.starts[rep] = at
	o.mu.Unlock()
}

// interval hands a copy of iv to every output; it never blocks.
func (o *liveOutputs) interval(rep int, iv *result.Interval) {
	o.mu.Lock()
	start := o.starts[rep]
	o.mu.Unlock()
	o.fan.Send(liveout.NewInterval(rep, start, o.names, iv))
}

// finish lets the outputs send what they hold (outputsCloseTimeout at
// most) and keeps what became of each in the result.
func (o *liveOutputs) finish(run *result.Run) {
	run.Outputs = o.fan.Close(outputsCloseTimeout)
}

// stop keeps the Prometheus page up for --prometheus-linger (unless ctx
// ends first: a signal), then stops serving it.
func (o *liveOutputs) stop(ctx context.Context) {
	if o.srv != nil && o.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(o.stderr, "throng: keeping %s up for %s (--prometheus-linger) for a last scrape\n", o.url, o.linger)
		t := time.NewTimer(o.linger)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	o.stopServer()
}

func (o *liveOutputs) stopServer() {
	if o.srv != nil {
		o.srv.Close()
	}
}
