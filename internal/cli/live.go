package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
)

// live shows the run's progress: one line updated in place on a terminal,
// or a plain line every few seconds when the output is a log (CI).
type live struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	quiet   bool
	plan    *plan.Plan
	runs    int
	elapsed float64
	errors  uint64
	last    time.Time
	every   time.Duration
	shown   bool
}

func newLive(w io.Writer, p *plan.Plan, runs int, quiet bool) *live {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &live{w: w, tty: tty, quiet: quiet, plan: p, runs: runs, every: max(5*time.Second, p.Interval)}
}

func (l *live) interval(rep int, iv *result.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The users' actions: the driver's events (deliveries) follow them.
	var all metrics.ActionSnapshot
	acts := iv.Finished() // whatever phase they count in
	for i := range acts[:min(len(l.plan.Actions), len(acts))] {
		s := acts[i].Snapshot()
		all.Merge(&s)
	}
	l.errors += all.ErrorCount()
	l.elapsed = iv.StartS + iv.DurationS
	if l.quiet {
		return
	}
	if !l.tty && time.Since(l.last) < l.every {
		return
	}
	l.last = time.Now()
	total := "–"
	if end := l.plan.End(); end != plan.Open {
		total = fmtDur(end.Seconds())
	}
	var b strings.Builder
	if l.runs > 1 {
		fmt.Fprintf(&b, "[run %d/%d] ", rep+1, l.runs)
	}
	rate := 0.0
	if iv.DurationS > 0 {
		rate = float64(all.Count) / iv.DurationS
	}
	fmt.Fprintf(&b, "%-9s %s/%s  users %d  %s/s  p99 %s  errors %d  client CPU %.0f%%",
		iv.Phase, fmtDur(l.elapsed), total, iv.ActiveUsers, fmtCount(rate),
		fmtMs(float64(all.Latency.Quantile(0.99))/1000, all.Latency.N), l.errors, 100*iv.Client.CPUCores)
	if iv.Client.Bound {
		b.WriteString("  CLIENT-BOUND")
	}
	if l.tty {
		fmt.Fprintf(l.w, "\r\x1b[K%s", b.String())
		l.shown = true
	} else {
		fmt.Fprintln(l.w, b.String())
	}
}

func (l *live) repetition(r *result.Repetition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = 0
	if l.runs <= 1 || l.quiet {
		return
	}
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
	s := result.Find(r.Summaries, result.All)
	if s != nil {
		fmt.Fprintf(l.w, "run %d: %s actions in %s, %s/s, p99 %s\n", r.Index+1, fmtCount(float64(s.Total.Count)),
			fmtDur(r.ElapsedS), fmtCount(s.Total.RatePerS), fmtMs(s.Total.Latency.P99Ms, s.Total.Timed()))
	}
}

// warn shows a warning between the progress lines.
func (l *live) warn(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
	fmt.Fprintf(l.w, "throng: %s\n", msg)
}

func (l *live) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}

func fmtDur(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	if sec < 10 {
		d = time.Duration(sec * float64(time.Second)).Round(100 * time.Millisecond)
	}
	return d.String()
}

func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtMs(v float64, n uint64) string {
	if n == 0 {
		return "–"
	}
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.2fms", v)
}
