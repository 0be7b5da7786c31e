// Package agent runs a plan over several load generators: the exact merge
// of their results, the controller and agent processes, and their
// authenticated wire protocol.
package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/result"
)

// Part is one segment's result and where it came from (a file, an agent).
type Part struct {
	Name string
	Run  *result.Run
}

// Merge combines the results of the segments of one plan into the result
// of the whole plan: counts, bytes, errors and histograms are added
// exactly, each in the phase it counts in; the intervals are placed on one
// clock, the plan's, from the earliest segment's start (rebin), so a
// phase's rates are over the time the plan gave it; the client figures are
// per agent (in Run.Agents) and summed where a sum means something (CPU,
// users). The
// counters of the first segment keep their names — it is the one that reads
// the server, when one does — and the others' get " (agent K)" appended.
//
// Parts must come from the same scenario (same text, seed and flags but the
// segment) and be distinct segments of the same n. A missing segment or a
// partial part makes the merged run partial, saying which.
func Merge(parts []Part) (*result.Run, error) {
	if len(parts) == 0 {
		return nil, errors.New("nothing to merge")
	}
	segs := make([]segID, len(parts))
	for i, p := range parts {
		s, err := parseSegID(p.Run.Meta.Segment)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		segs[i] = s
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return segs[order[a]].k < segs[order[b]].k })
	first := parts[order[0]].Run
	if err := checkSamePlan(parts, segs); err != nil {
		return nil, err
	}
	run := &result.Run{Schema: result.Schema, Meta: first.Meta}
	run.Meta.Segment = "1/1"
	run.Meta.SegmentUsers = 0
	run.Meta.Command = nil
	var reasons []string
	for rank, i := range order {
		p := parts[i]
		m := p.Run.Meta
		run.Meta.SegmentUsers += m.SegmentUsers
		ag := result.Agent{Name: p.Name, Segment: m.Segment, Host: m.Host, Users: m.SegmentUsers,
			StartSkewMs: float64(m.StartedAt.Sub(first.Meta.StartedAt).Microseconds()) / 1000,
			Partial:     p.Run.Partial, Reason: p.Run.Reason}
		for _, rep := range p.Run.Repetitions {
			if len(rep.Summaries) == 0 {
				rep.Summaries = result.Summarize(m.Actions, len(m.Events), rep.Intervals)
			}
			all := result.Find(rep.Summaries, result.All)
			if all == nil {
				all = &result.Summary{}
			}
			ag.ClientCPUMean = append(ag.ClientCPUMean, all.ClientCPUMean)
			ag.BoundIntervals = append(ag.BoundIntervals, all.BoundIntervals)
		}
		if rank == 0 {
			ag.StartSkewMs = 0
		}
		run.Agents = append(run.Agents, ag)
		if p.Run.Partial {
			reasons = append(reasons, fmt.Sprintf("segment %s (%s) is partial: %s", m.Segment, p.Name, p.Run.Reason))
		}
	}
	n := segs[0].n
	if lack := n - len(segs); lack > 0 {
		// The parts are distinct segments (checkSamePlan): name the first
		// few missing ones, however large n.
		var missing []string
		for k := 1; k <= n && len(missing) < 10; k++ {
			if !slices.ContainsFunc(segs, func(s segID) bool { return s.k == k }) {
				missing = append(missing, strconv.Itoa(k))
			}
		}
		list := strings.Join(missing, ", ")
		if lack > len(missing) {
			list += fmt.Sprintf(" and %d more", lack-len(missing))
		}
		reasons = append(reasons, fmt.Sprintf("segments %s of %d are missing: their users are not in this result", list, n))
	}
	// Repetitions, by index; a repetition absent from a part is missing.
	reps := 0
	for _, p := range parts {
		reps = max(reps, len(p.Run.Repetitions))
	}
	for r := 0; r < reps; r++ {
		var rs []*result.Repetition
		for rank, i := range order {
			if r < len(parts[i].Run.Repetitions) {
				rep := parts[i].Run.Repetitions[r]
				renameCounters(&rep, rank)
				rs = append(rs, &rep)
			} else {
				reasons = append(reasons, fmt.Sprintf("%s has no repetition %d", parts[i].Name, r+1))
			}
		}
		run.Repetitions = append(run.Repetitions, mergeRepetition(r, rs, &first.Meta))
	}
	if len(run.Repetitions) > 1 {
		var full []result.Repetition
		for _, rep := range run.Repetitions {
			if !rep.Partial {
				full = append(full, rep)
			}
		}
		run.Aggregate = compare.Aggregate(full, first.Meta.Trim, first.Meta.CountBound())
	}
	if len(reasons) > 0 {
		run.Partial = true
		run.Reason = strings.Join(reasons, "; ")
	}
	return run, nil
}

// segID is a parsed "k/n" or "k/n@w1,w2".
type segID struct {
	k, n    int
	weights string
}

func parseSegID(s string) (segID, error) {
	main, w, _ := strings.Cut(s, "@")
	a, b, ok := strings.Cut(main, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || k < 1 || k > n {
		return segID{}, fmt.Errorf("segment %q is not k/n", s)
	}
	return segID{k, n, w}, nil
}

// checkSamePlan refuses parts of different plans.
func checkSamePlan(parts []Part, segs []segID) error {
	a := parts[0].Run.Meta
	seen := map[int]string{}
	for i, p := range parts {
		m := p.Run.Meta
		switch {
		case m.SourceSHA256 != a.SourceSHA256:
			return fmt.Errorf("%s and %s come from different scenario texts", parts[0].Name, p.Name)
		case m.Seed != a.Seed || m.Speedup != a.Speedup || m.Users != a.Users || m.Model != a.Model:
			return fmt.Errorf("%s and %s differ in seed, speedup, users or model", parts[0].Name, p.Name)
		case !sameOverrides(m.Overrides, a.Overrides):
			return fmt.Errorf("%s and %s were run with different flags", parts[0].Name, p.Name)
		case !slices.Equal(m.Actions, a.Actions):
			return fmt.Errorf("%s and %s have different actions", parts[0].Name, p.Name)
		case segs[i].n != segs[0].n || segs[i].weights != segs[0].weights:
			return fmt.Errorf("%s is segment %s, %s is %s: not the same split", p.Name, m.Segment, parts[0].Name, a.Segment)
		}
		if other, dup := seen[segs[i].k]; dup {
			return fmt.Errorf("%s and %s are both segment %s", other, p.Name, m.Segment)
		}
		seen[segs[i].k] = p.Name
	}
	return nil
}

// sameOverrides reports whether two parts were given the same settings,
// their segments apart. The keys are key paths ("users", "segment"); older
// results keyed them by flag ("--users", "--segment").
func sameOverrides(a, b map[string]string) bool {
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			switch k {
			case "segment", "weights", "start_at", "--segment", "--weights", "--start-at", "--out":
			default:
				out[k] = v
			}
		}
		return out
	}
	x, y := strip(a), strip(b)
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}

// renameCounters marks the counter sources of every part but the first.
func renameCounters(rep *result.Repetition, rank int) {
	if rank == 0 {
		return
	}
	ivs := make([]result.Interval, len(rep.Intervals))
	for i, iv := range rep.Intervals {
		iv.Counters = renamed(iv.Counters, rank)
		ivs[i] = iv
	}
	rep.Intervals = ivs
}

// mergeRepetition merges the segments' repetitions (in segment order) on
// one clock (see rebin).
func mergeRepetition(index int, rs []*result.Repetition, meta *result.Meta) result.Repetition {
	out := result.Repetition{Index: index}
	var reasons []string
	t0 := earliestStart(rs)
	out.StartedAt = t0
	for _, r := range rs {
		off := 0.0
		if !r.StartedAt.IsZero() {
			off = r.StartedAt.Sub(t0).Seconds()
		}
		out.ElapsedS = max(out.ElapsedS, off+r.ElapsedS)
		out.DrainS = max(out.DrainS, r.DrainS)
		out.Aborted += r.Aborted
		if r.Partial {
			reasons = append(reasons, r.Reason)
		}
	}
	out.Intervals = rebin(rs, meta)
	if len(reasons) > 0 {
		out.Partial = true
		out.Reason = strings.Join(dedupe(reasons), "; ")
	}
	out.Summaries = result.Summarize(meta.Actions, len(meta.Events), out.Intervals)
	out.Taints = result.ComputeTaints(&out)
	return out
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// PartName names a part read from a file.
func PartName(path string) string { return filepath.Base(path) }
