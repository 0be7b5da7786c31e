package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// This file places the segments' intervals of one repetition on one clock.
//
// Each segment cut its intervals on its own clock, from its own start:
// segments start a little apart (the start skew), and a count-bound
// segment ramps down when its own first user is done, so their intervals
// neither start together nor have the same lengths. The merged repetition
// starts at the earliest segment's start; its intervals (bins) are the
// plan's, on that clock: every interval of the recording from each planned
// phase's start, cut at the phase's end (Meta.Phases). The steady phase of
// a count-bound plan, which each segment ended when its own first user was
// done, lasts so that its rate is the sum of the segments' (openEnd). After
// the plan come
// bins of one interval each until the last segment is done, spanning the
// ramp-down of a count-bound plan, the tail and the drain.
//
// A segment's interval goes into the bin that holds its midpoint on the
// merged clock. What it holds keeps the phase it counts in (an action
// counts in the phase of its scheduled start, in every segment), so the
// phases' counts and histograms are exact sums whatever bin they land in;
// a phase's time is the time of the bins that span it, from the plan: its
// rates are over the time the plan gave it, not a sum of segment intervals.

// part is one segment's interval placed on the merged clock.
type part struct {
	seg        int
	iv         *result.Interval
	start, end float64 // seconds from the merged start
}

// bin is one merged interval being built.
type bin struct {
	start, end float64
	phase      string // "" for a bin after the plan, labelled by its parts
	parts      []part
}

// rebin merges the repetitions of the segments (in segment order) onto one
// clock; meta is the plan's.
func rebin(rs []*result.Repetition, meta *result.Meta) []result.Interval {
	t0 := earliestStart(rs)
	var parts []part
	maxEnd := 0.0
	for k, r := range rs {
		off := 0.0
		if !r.StartedAt.IsZero() {
			off = r.StartedAt.Sub(t0).Seconds()
		}
		for i := range r.Intervals {
			iv := &r.Intervals[i]
			p := part{seg: k, iv: iv, start: off + iv.StartS, end: off + iv.StartS + iv.DurationS}
			parts = append(parts, p)
			maxEnd = max(maxEnd, p.end)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	bins := grid(meta, parts, len(rs), maxEnd)
	for _, p := range parts {
		mid := (p.start + p.end) / 2
		i, _ := slices.BinarySearchFunc(bins, mid, func(b *bin, t float64) int {
			switch {
			case b.end <= t:
				return -1
			case b.start > t:
				return 1
			}
			return 0
		})
		i = min(i, len(bins)-1)
		bins[i].parts = append(bins[i].parts, p)
	}
	phases := phaseOrder(meta, parts)
	out := make([]result.Interval, 0, len(bins))
	for _, b := range bins {
		iv := mergeBin(b, len(meta.Actions), phases, len(rs))
		iv.Index = len(out)
		out = append(out, iv)
	}
	return out
}

// earliestStart is the earliest segment start (zero when none is known).
func earliestStart(rs []*result.Repetition) (t0 time.Time) {
	for _, r := range rs {
		if !r.StartedAt.IsZero() && (t0.IsZero() || r.StartedAt.Before(t0)) {
			t0 = r.StartedAt
		}
	}
	return t0
}

// grid is the merged clock's bins, up to maxEnd.
func grid(meta *result.Meta, parts []part, segs int, maxEnd float64) []*bin {
	step := meta.IntervalS
	if step <= 0 {
		step = 1
	}
	var bins []*bin
	add := func(phase string, from, to float64) {
		for k := 0; ; k++ {
			t := from + float64(k)*step
			if t >= to-1e-9 {
				return
			}
			bins = append(bins, &bin{start: t, end: min(t+step, to), phase: phase})
		}
	}
	end := 0.0
	for _, ph := range planned(meta, parts) {
		to := ph.EndS
		if to < 0 {
			to = openEnd(ph, parts, segs, maxEnd)
		}
		to = min(to, maxEnd)
		add(ph.Name, ph.StartS, to)
		end = max(end, to)
	}
	add("", end, maxEnd)
	if len(bins) == 0 {
		bins = append(bins, &bin{start: 0, end: maxEnd})
	}
	return bins
}

// planned is the plan's phases: Meta.Phases, or, for a result without
// them, the phases of the first segment's intervals as they came.
func planned(meta *result.Meta, parts []part) []result.PhaseMeta {
	if len(meta.Phases) > 0 {
		return meta.Phases
	}
	var out []result.PhaseMeta
	for _, p := range parts {
		if p.seg != 0 || afterPlan(p.iv.Phase) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Name == p.iv.Phase {
			out[n-1].EndS = p.end
			continue
		}
		out = append(out, result.PhaseMeta{Name: p.iv.Phase, StartS: p.start, EndS: p.end})
	}
	return out
}

// afterPlan reports whether intervals of a phase come after the plan's
// phases: a count-bound ramp-down, the tail, the drain.
func afterPlan(phase string) bool {
	return phase == plan.RampDown || phase == plan.Tail || phase == plan.Drain
}

// openEnd is the end of a phase that lasts until the users are done (the
// steady phase of a count-bound plan, which each segment ends when its own
// first user is done): the phase lasts D from its start, where D makes the
// phase's merged rate the sum of the segments' own rates in it — D =
// Σ n_k / Σ (n_k / L_k), for segment k's n_k actions over its L_k seconds
// of the phase. D lies between the shortest and the longest L_k.
func openEnd(ph result.PhaseMeta, parts []part, segs int, maxEnd float64) float64 {
	n := make([]float64, segs)
	l := make([]float64, segs)
	for _, p := range parts {
		if p.iv.Phase == ph.Name {
			l[p.seg] += p.iv.DurationS
		}
		for i, c := range p.iv.Carried {
			if c.Phase == ph.Name {
				n[p.seg] += float64(countOf(p.iv.Carried[i].Actions))
			}
		}
		if p.iv.Phase == ph.Name {
			n[p.seg] += float64(countOf(p.iv.Actions))
		}
	}
	var count, rate, longest float64
	for k := range segs {
		longest = max(longest, l[k])
		if n[k] > 0 && l[k] > 0 {
			count += n[k]
			rate += n[k] / l[k]
		}
	}
	d := longest
	if rate > 0 {
		d = count / rate
	}
	return min(ph.StartS+d, maxEnd)
}

// countOf is the actions counted in acts, of every kind.
func countOf(acts []result.ActionInterval) uint64 {
	var n uint64
	for i := range acts {
		n += acts[i].Count
	}
	return n
}

// binLabel names a bin after the plan by its parts: the latest of the
// ramp-down, the tail and the drain among them (the tail when none).
func binLabel(b *bin) string {
	rank := map[string]int{plan.Tail: 1, plan.RampDown: 2, plan.Drain: 3}
	label := plan.Tail
	for _, p := range b.parts {
		if rank[p.iv.Phase] > rank[label] {
			label = p.iv.Phase
		}
	}
	return label
}

// phaseOrder lists every phase anything counts in: the plan's first, then
// the others as they come.
func phaseOrder(meta *result.Meta, parts []part) []string {
	var out []string
	seen := func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, ph := range planned(meta, parts) {
		seen(ph.Name)
	}
	for _, p := range parts {
		seen(p.iv.Phase)
		for _, c := range p.iv.Carried {
			seen(c.Phase)
		}
	}
	return out
}

// mergeBin adds a bin's parts: what counts in each phase exactly; the
// client figures per segment (time-weighted over its parts) then summed
// over the segments where a sum means something.
func mergeBin(b *bin, actions int, phases []string, segs int) result.Interval {
	out := result.Interval{StartS: b.start, DurationS: b.end - b.start, Phase: b.phase}
	if out.Phase == "" {
		out.Phase = binLabel(b)
	}
	// What counts in each phase.
	content := map[string][]metrics.ActionSnapshot{}
	addTo := func(phase string, acts []result.ActionInterval) {
		c := content[phase]
		if c == nil {
			c = make([]metrics.ActionSnapshot, actions)
			content[phase] = c
		}
		for a := 0; a < actions && a < len(acts); a++ {
			s := acts[a].Snapshot()
			c[a].Merge(&s)
		}
	}
	for _, p := range b.parts {
		addTo(p.iv.Phase, p.iv.Actions)
		for _, c := range p.iv.Carried {
			addTo(c.Phase, c.Actions)
		}
	}
	out.Actions = make([]result.ActionInterval, actions)
	if own := content[out.Phase]; own != nil {
		out.Actions = fromSnapshots(own)
	}
	for _, ph := range phases {
		if c := content[ph]; c != nil && ph != out.Phase && recorded(c) {
			out.Carried = append(out.Carried, result.PhaseActions{Phase: ph, Actions: fromSnapshots(c)})
		}
	}
	// The client figures, segment by segment.
	var whys []string
	for k := range segs {
		var mine []part
		for _, p := range b.parts {
			if p.seg == k {
				mine = append(mine, p)
			}
		}
		if len(mine) == 0 {
			continue
		}
		last := mine[len(mine)-1].iv
		span := 0.0
		for _, p := range mine {
			span += p.iv.DurationS
		}
		var cores, users float64
		usersMax := 0
		for _, p := range mine {
			c := p.iv.Client
			w := 1.0 / float64(len(mine))
			if span > 0 {
				w = p.iv.DurationS / span
			}
			cores += c.CPUCores * w
			users += p.iv.UsersMean * w
			usersMax = max(usersMax, p.iv.UsersMax)
			out.Client.LagP99Ms = max(out.Client.LagP99Ms, c.LagP99Ms)
			out.Client.LagMaxMs = max(out.Client.LagMaxMs, c.LagMaxMs)
			out.Client.CPUWait = max(out.Client.CPUWait, c.CPUWait)
			out.Client.MachineBusy = max(out.Client.MachineBusy, c.MachineBusy) // the busiest machine
			if c.Bound {
				out.Client.Bound = true
				whys = append(whys, fmt.Sprintf("agent %d: %s", k+1, c.BoundWhy))
			}
		}
		out.Client.CPUCores += cores
		out.UsersMean += users
		out.UsersMax += usersMax
		out.ActiveUsers += last.ActiveUsers
		out.Client.Capacity += last.Client.Capacity
		out.Client.Connections += last.Client.Connections
		out.Client.Goroutines += last.Client.Goroutines
		out.Client.RSSBytes += last.Client.RSSBytes
		out.Client.ThreadBusy = append(out.Client.ThreadBusy, last.Client.ThreadBusy...)
		out.Counters = append(out.Counters, mergeCounters(mine)...)
	}
	out.Client.BoundWhy = strings.Join(dedupe(whys), "; ")
	return out
}

// mergeCounters combines one segment's counter readings over its parts in
// a bin: each series' time-weighted mean over the parts where its source
// answered (a source that never answered keeps its first reason).
func mergeCounters(mine []part) []sampler.SourceValues {
	if len(mine) == 1 {
		return mine[0].iv.Counters
	}
	var out []sampler.SourceValues
	weights := map[string]float64{}
	for _, p := range mine {
		for _, c := range p.iv.Counters {
			i := slices.IndexFunc(out, func(o sampler.SourceValues) bool { return o.Name == c.Name })
			if i < 0 {
				out = append(out, sampler.SourceValues{Name: c.Name, Err: c.Err, Values: map[string]float64{}})
				i = len(out) - 1
			}
			if !c.Up {
				continue
			}
			o := &out[i]
			o.Up, o.Err = true, ""
			w := max(p.iv.DurationS, 1e-9)
			for k, v := range c.Values {
				o.Values[k] += v * w
			}
			weights[c.Name] += w
		}
	}
	for i := range out {
		if w := weights[out[i].Name]; w > 0 {
			for k := range out[i].Values {
				out[i].Values[k] /= w
			}
		}
		if len(out[i].Values) == 0 {
			out[i].Values = nil
		}
	}
	return out
}

func fromSnapshots(s []metrics.ActionSnapshot) []result.ActionInterval {
	out := make([]result.ActionInterval, len(s))
	for i := range s {
		out[i] = result.FromSnapshot(&s[i])
	}
	return out
}

// recorded reports whether anything counts in s.
func recorded(s []metrics.ActionSnapshot) bool {
	for i := range s {
		if s[i].Count > 0 || s[i].Dropped > 0 || s[i].BytesIn > 0 || s[i].BytesOut > 0 {
			return true
		}
	}
	return false
}
