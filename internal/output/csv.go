package output

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
)

// CSVColumns are the columns of --output csv=FILE, one row per interval
// and action, and one more per action of another phase that finished in
// the interval (an action counts in the phase of its scheduled start);
// docs/outputs.md says what each column holds.
var CSVColumns = []string{"repetition", "interval", "end", "start_s", "duration_s", "phase", "action",
	"count", "ok", "errors", "skipped", "dropped", "bytes_in", "bytes_out",
	"latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p99_9_ms", "latency_max_ms",
	"users", "client_cpu_cores", "client_bound"}

// CSV writes rows to a file, flushed after every interval (a run cut
// short keeps its rows).
type CSV struct {
	f *os.File
	b *bufio.Writer
	w *csv.Writer
}

// NewCSV creates (or truncates) path and writes the header.
func NewCSV(path string) (*CSV, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	b := bufio.NewWriter(f)
	c := &CSV{f: f, b: b, w: csv.NewWriter(b)}
	c.w.Write(CSVColumns)
	c.w.Flush()
	if err := errors.Join(c.w.Error(), b.Flush()); err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// Write writes the interval's rows.
func (c *CSV) Write(_ context.Context, iv *Interval) error {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	ms := func(h *metrics.Hist, q float64) string {
		if h.N == 0 {
			return ""
		}
		return num(float64(h.Quantile(q)) / 1e3)
	}
	bound := "0"
	if iv.Bound {
		bound = "1"
	}
	iv.Phases(func(phase string, actions []Action) {
		for i := range actions {
			a := &actions[i]
			var errs, skipped uint64
			for class, n := range a.Errors {
				if class == driver.Skipped.String() {
					skipped += n
				} else {
					errs += n
				}
			}
			mean := ""
			if a.Latency.N > 0 {
				mean = num(a.Latency.Mean() / 1e3)
			}
			c.w.Write([]string{itoa(iv.Repetition), itoa(iv.Index), iv.End.UTC().Format(time.RFC3339Nano), num(iv.StartS), num(iv.DurationS),
				phase, a.Name, u(a.Count), u(a.Count - min(a.Count, errs+skipped)), u(errs), u(skipped), u(a.Dropped), u(a.BytesIn), u(a.BytesOut),
				mean, ms(&a.Latency, 0.5), ms(&a.Latency, 0.9), ms(&a.Latency, 0.95), ms(&a.Latency, 0.99), ms(&a.Latency, 0.999), ms(&a.Latency, 1),
				itoa(iv.Users), num(iv.ClientCPU), bound})
		}
	})
	c.w.Flush()
	return errors.Join(c.w.Error(), c.b.Flush())
}

// Close flushes and closes the file.
func (c *CSV) Close(context.Context) error {
	c.w.Flush()
	return errors.Join(c.w.Error(), c.b.Flush(), c.f.Close())
}
