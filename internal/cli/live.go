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
	width   func() int // the terminal's columns now (0: unknown)
	planned int64      // iterations planned in a count-bound run; 0 otherwise
	doneN   int64      // iterations finished in this repetition
}

func newLive(w io.Writer, p *plan.Plan, runs int, quiet bool) *live {
	tty, width := false, func() int { return 0 }
	if f, ok := w.(*os.File); ok {
		fd := int(f.Fd())
		tty = term.IsTerminal(fd)
		width = func() int {
			if w, _, err := term.GetSize(fd); err == nil {
				return w
			}
			return 0
		}
	}
	return &live{w: w, tty: tty, quiet: quiet, plan: p, runs: runs, every: max(5*time.Second, p.Interval),
		width: width, planned: plannedIterations(p)}
}

// plannedIterations is the number of iterations (actions, or journeys when
// the users run journeys) a count-bound run of p does in this segment,
// which tells its progress; 0 when the run is bounded by time.
func plannedIterations(p *plan.Plan) int64 {
	if p.Total > 0 {
		return p.Total
	}
	if !p.CountBound {
		return 0
	}
	var n int64
	for _, u := range p.Users {
		n += int64(p.Groups[u.Group].Iterations)
	}
	return n
}

// header says at the start what is about to run and where its result goes.
func (l *live) header(m *result.Meta, out string) {
	if l.quiet {
		return
	}
	end := "until its iterations are done"
	if e := l.plan.End(); e != plan.Open {
		end = "for " + fmtDur(e.Seconds())
	}
	runs := ""
	if l.runs > 1 {
		runs = fmt.Sprintf(", %d runs", l.runs)
	}
	fmt.Fprintf(l.w, "throng: %s: %d users (%s) against %s %s%s; result %s\n",
		m.Scenario, m.Users, m.Model, m.Target, end, runs, out)
}

// progress is the share of the run done and the time left, when the end
// is known: by the plan's length, or by the iterations of a count-bound
// run. ok is false when neither is known.
func (l *live) progress() (frac float64, left time.Duration, ok bool) {
	if end := l.plan.End(); end != plan.Open && end > 0 {
		frac = min(1, l.elapsed/end.Seconds())
		return frac, time.Duration((end.Seconds() - l.elapsed) * float64(time.Second)), true
	}
	if l.planned > 0 && l.doneN > 0 {
		frac = min(1, float64(l.doneN)/float64(l.planned))
		return frac, time.Duration(l.elapsed * (1 - frac) / frac * float64(time.Second)), true
	}
	return 0, 0, false
}

// fit cuts line to the terminal's width, so that it never wraps (a wrapped
// line scrolls instead of being redrawn in place).
func fit(line string, width int) string {
	if width <= 1 {
		return line
	}
	r := []rune(line)
	if len(r) < width {
		return line
	}
	return string(r[:width-2]) + "…"
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
	if len(l.plan.Journeys) > 0 {
		for j := range l.plan.Journeys {
			if r := l.plan.JourneyRow(j); r < len(acts) {
				l.doneN += int64(acts[r].Count)
			}
		}
	} else {
		l.doneN += int64(all.Count)
	}
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
	fmt.Fprintf(&b, "%-9s %s/%s", iv.Phase, fmtDur(l.elapsed), total)
	if frac, left, ok := l.progress(); ok {
		fmt.Fprintf(&b, " %3.0f%% ETA %s", 100*frac, fmtDur(left.Seconds()))
	}
	fmt.Fprintf(&b, "  users %d  %s/s  p99 %s  errors %d  client CPU %.0f%%",
		iv.ActiveUsers, fmtCount(rate),
		fmtMs(float64(all.Latency.Quantile(0.99))/1000, all.Latency.N), l.errors, 100*iv.Client.CPUCores)
	if iv.Client.Bound {
		b.WriteString("  CLIENT-BOUND")
	}
	if l.tty {
		fmt.Fprintf(l.w, "\r\x1b[K%s", fit(b.String(), l.width()))
		l.shown = true
	} else {
		fmt.Fprintln(l.w, b.String())
	}
}

func (l *live) repetition(r *result.Repetition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors, l.doneN = 0, 0
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
