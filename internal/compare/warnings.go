package compare

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// profileKeys are the scenario's top-level keys that make its user
// profile: what the users do, how many, and when.
var profileKeys = []string{"users", "model", "closed", "open", "phases", "actions", "groups", "vars", "seed"}

// runWarnings says in words what makes the runs hard to compare: each run
// against the first (profile, scale, variables, speedup, model, machine,
// engine), then
// each run's own state in the compared phases (client-bound, partial, not
// valid), each said once. state is the set of those about one run's own
// state (client-bound, partial, not valid).
func runWarnings(views []*view, phases []string, diffs []ConfigDiff) (out []string, state map[string]bool) {
	state = map[string]bool{}
	a := views[0].run.Meta
	// The user profile: what the users do and how many, when (not how
	// the server is reached or configured, which are the point of an A/B).
	var profile []string
	for _, d := range diffs {
		top := d.Key
		if i := strings.IndexAny(top, ".["); i > 0 {
			top = top[:i]
		}
		if slices.Contains(profileKeys, top) {
			profile = append(profile, d.Key)
		}
	}
	for _, v := range views[1:] {
		b, pair := v.run.Meta, views[0].col.Label+" and "+v.col.Label
		switch {
		case a.Source == "" || b.Source == "":
			if a.Scenario != b.Scenario {
				out = append(out, fmt.Sprintf("%s ran different scenarios (%s, %s): results of different user profiles are not comparable.", pair, a.Scenario, b.Scenario))
			}
		case len(profile) > 0:
			keys := strings.Join(profile, ", ")
			if len(profile) > 6 {
				keys = fmt.Sprintf("%s and %d more keys", strings.Join(profile[:6], ", "), len(profile)-6)
			}
			out = append(out, fmt.Sprintf("%s ran different user profiles (%s differ): results of different user profiles are not comparable.", pair, keys))
		}
		var scale []string
		if a.Users != b.Users {
			scale = append(scale, fmt.Sprintf("users %d vs %d", a.Users, b.Users))
		}
		if a.Iterations != b.Iterations || a.Total != b.Total {
			scale = append(scale, fmt.Sprintf("iterations %s vs %s", iterations(a), iterations(b)))
		}
		if a.RatePerS != b.RatePerS {
			scale = append(scale, fmt.Sprintf("arrival rate %g/s vs %g/s", a.RatePerS, b.RatePerS))
		}
		if len(scale) > 0 {
			out = append(out, fmt.Sprintf("%s ran different loads (%s): the differences below come from the load as well as from the system under test.", pair, strings.Join(scale, ", ")))
		}
		if va, vb := setVars(a), setVars(b); va != vb {
			out = append(out, fmt.Sprintf("%s were given different scenario variables (%s vs %s): a preset's variables change its load or its data set.", pair, va, vb))
		}
		if a.Speedup != b.Speedup {
			out = append(out, fmt.Sprintf("%s ran at different speedups (%gx vs %gx): their rates and think times differ.", pair, a.Speedup, b.Speedup))
		}
		if a.Model != b.Model {
			out = append(out, fmt.Sprintf("%s ran different models (%s vs %s): an open run times actions from their scheduled start, a closed run from their actual start.", pair, a.Model, b.Model))
		}
		if a.Host.Hostname != b.Host.Hostname || a.Host.Cores != b.Host.Cores {
			out = append(out, fmt.Sprintf("%s were generated on different machines (%s, %d cores vs %s, %d cores): the load generator's own limits differ.", pair, a.Host.Hostname, a.Host.Cores, b.Host.Hostname, b.Host.Cores))
		}
		if a.Engine != b.Engine || a.Threads != b.Threads {
			out = append(out, fmt.Sprintf("%s used different engines (%s vs %s): the generator's overhead differs.", pair, engine(a), engine(b)))
		}
	}
	// Runs of fewer than two finished repetitions: one sentence for all.
	few := map[int][]string{}
	var counts []int
	for _, v := range views {
		partial := ""
		if v.col.Partial {
			partial = partialWarning(v)
		}
		for _, w := range []string{boundWarning(v, phases), partial, invalidWarning(v)} {
			if w != "" {
				out, state[w] = append(out, w), true
			}
		}
		if n := v.col.Used; n < 2 {
			if len(few[n]) == 0 {
				counts = append(counts, n)
			}
			few[n] = append(few[n], v.col.Label)
		}
	}
	for _, n := range counts {
		who, has, each := few[n][0], "has", ""
		if k := len(few[n]); k > 1 {
			who, has, each = strings.Join(few[n][:k-1], ", ")+" and "+few[n][k-1], "have", " each"
		}
		it := "it"
		if each != "" {
			it = "them"
		}
		out = append(out, fmt.Sprintf("%s %s %d finished repetition%s%s: no difference with %s can be judged (run %s with --runs 5 --trim 1, or with the other configurations: throng run a.yaml b.yaml --runs 5).",
			who, has, n, map[bool]string{true: "", false: "s"}[n == 1], each, it, it))
	}
	return out, state
}

// invalidWarning says which repetitions of a run are not valid: each
// check that failed once, with the repetitions it concerns and the first
// one's reason.
func invalidWarning(v *view) string {
	var order []string
	reps := map[string][]string{}
	first := map[string]string{}
	for i := range v.run.Repetitions {
		val := result.ValidityOf(&v.run.Meta, &v.run.Repetitions[i])
		for _, c := range val.Checks {
			if c.Status == result.Fail || c.Status == result.Unknown {
				key := c.Name + " " + c.Status
				if _, ok := reps[key]; !ok {
					order = append(order, key)
					first[key] = c.Message
				}
				reps[key] = append(reps[key], fmt.Sprint(i+1))
			}
		}
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, key := range order {
		who := ""
		if len(v.run.Repetitions) > 1 {
			who = "repetition"
			if len(reps[key]) > 1 {
				who += "s"
			}
			who += " " + strings.Join(reps[key], ", ") + ": "
		}
		parts = append(parts, who+key+" ("+first[key]+")")
	}
	return fmt.Sprintf("%s: %d of %d repetitions not valid — %s.", v.col.Label, len(v.run.Repetitions)-v.col.Valid, len(v.run.Repetitions), strings.Join(parts, "; "))
}

// setVars lists the scenario variables a run was given (--set, and the
// shorthands that stand for it), sorted: "inbox=20 size=8KB", or "none".
// They are recorded as settings "vars.NAME" (older results: "--set NAME").
func setVars(m result.Meta) string {
	var vs []string
	for k, v := range m.Overrides {
		name, ok := strings.CutPrefix(k, "vars.")
		if !ok {
			name, ok = strings.CutPrefix(k, "--set ")
		}
		if ok {
			vs = append(vs, name+"="+v)
		}
	}
	if len(vs) == 0 {
		return "none"
	}
	sort.Strings(vs)
	return strings.Join(vs, " ")
}

func iterations(m result.Meta) string {
	if !m.CountBound() {
		return "none (bounded by time)"
	}
	return m.CountText()
}

func engine(m result.Meta) string {
	switch {
	case m.Threads == 1:
		return m.Engine + " (1 thread)"
	case m.Threads > 1:
		return fmt.Sprintf("%s (%d threads)", m.Engine, m.Threads)
	}
	return m.Engine
}

// boundWarning counts the client-bound intervals of the compared phases,
// in one sentence per run.
func boundWarning(v *view, phases []string) string {
	var parts []string
	why := ""
	for _, ph := range phases {
		bound, total := 0, 0
		for _, rep := range v.run.Repetitions {
			for _, iv := range rep.Intervals {
				if ph == result.All || iv.Phase == ph {
					total++
					if iv.Client.Bound {
						bound++
						why = cmp.Or(why, iv.Client.BoundWhy)
					}
				}
			}
		}
		if bound > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d intervals of the %s phase", bound, total, ph))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s were client-bound (%s): there its figures measure the load generator, not the server.",
		v.col.Label, strings.Join(parts, " and "), why)
}

// partialWarning says which part of a cut run is missing: repetitions never
// run, planned phases never reached or cut short.
func partialWarning(v *view) string {
	m := v.run.Meta
	reason := v.run.Reason
	var missing []string
	switch n := len(v.run.Repetitions); {
	case m.Runs == n+1:
		missing = append(missing, fmt.Sprintf("repetition %d of %d never ran", m.Runs, m.Runs))
	case m.Runs > n:
		missing = append(missing, fmt.Sprintf("repetitions %d to %d of %d never ran", n+1, m.Runs, m.Runs))
	}
	// The repetitions cut short; when none is marked, the last one.
	var cut []*result.Repetition
	for i := range v.run.Repetitions {
		if v.run.Repetitions[i].Partial {
			cut = append(cut, &v.run.Repetitions[i])
		}
	}
	if n := len(v.run.Repetitions); len(cut) == 0 && n > 0 {
		cut = append(cut, &v.run.Repetitions[n-1])
	}
	for _, rep := range cut {
		reason = cmp.Or(reason, rep.Reason)
		prefix := ""
		if len(v.run.Repetitions) > 1 {
			prefix = fmt.Sprintf("repetition %d: ", rep.Index+1)
		}
		for _, ph := range m.Phases {
			s := result.Find(rep.Summaries, ph.Name)
			switch {
			case s == nil || s.Intervals == 0:
				missing = append(missing, prefix+"the whole "+ph.Name+" phase")
			case ph.EndS < 0 && rep.Partial:
				missing = append(missing, fmt.Sprintf("%sthe end of the %s phase (cut after %.1f s, before the users were done)", prefix, ph.Name, s.DurationS))
			case ph.EndS >= 0 && s.DurationS < ph.EndS-ph.StartS-0.5*m.IntervalS:
				missing = append(missing, fmt.Sprintf("%s%.1f s of the %.1f s planned for the %s phase", prefix, ph.EndS-ph.StartS-s.DurationS, ph.EndS-ph.StartS, ph.Name))
			}
		}
	}
	what := "Nothing of its plan is known to be missing"
	if len(missing) > 0 {
		what = "Missing: " + strings.Join(missing, "; ")
	}
	return fmt.Sprintf("%s is a partial run: %s. %s. Its figures cover only what was recorded.", v.col.Label, strings.TrimSuffix(reason, "."), what)
}
