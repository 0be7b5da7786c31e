// Package threshold checks a run's figures against limits written as text,
// like "p95 < 500ms", "ramp-up: error_rate < 1%" or "page.p99 <= 1s", and
// writes the outcomes as a JUnit report for CI.
//
// # Grammar
//
//	threshold = [ phases ":" ] [ action "." ] metric operator value
//	phases    = "*" | phase { "," phase }
//	phase     = "ramp-up" | "steady" | "ramp-down" | "all"      (ramp_up, ramp_down also read)
//	action    = the name of one of the scenario's actions, or of a row KIND:NAME
//	            (journey:NAME, check:NAME: see RowKinds)
//	operator  = "<" | "<=" | ">" | ">=" | "==" | "!="
//	value     = number [ unit ] | "true" | "false"
//
// Spaces around the parts are optional ("p95<500ms" is "p95 < 500ms"), as
// is a space between a number and its unit ("500 ms"). Without phases a
// threshold applies to the steady phase, or to the whole run ("all") when
// the run has no steady phase — except the counts of what went wrong with
// the data (loss, corrupt, misdelivered, duplicated), which apply to the
// whole run: none at all is what "loss == 0" asks; "*" is every phase the run recorded (not
// "all"); a list gives each phase its own outcome. Without an action it
// applies to the users' actions together, not to the driver's events
// (deliver, connect: name them), except loss and corrupt, which count every
// action's (an upload's read-back, files' verify event, is where a server
// that stored other bytes shows).
//
// # Defaults
//
// A family may judge every run by default (files: "all: corrupt == 0", so
// that a copy with corrupt data fails the run): see WithDefaults. A
// threshold of the scenario on the same metric replaces the default.
//
// loss counts deliveries: mail owes one per recipient (a message to three
// users that reaches none is 3), pub/sub one per subscriber. misdelivered
// (mail) counts the copies found in the INBOX of a user who was none of
// the message's recipients; duplicated counts the driver's "duplicate"
// events (mail: a second copy in a recipient's INBOX; pub/sub: a message
// delivered again). A run whose driver does not track them has no such
// figure. Each is counted in the phase its message was sent in.
//
// # Metrics
//
//	metric                        figure (of the phase)                             value written as          per action
//	mean p50 p90 p95 p99 p99.9 max latency from the scheduled start                 duration: 500ms, 1.5s, 800us  yes
//	service_mean ... service_max  service time, from the actual start               duration                  yes
//	rate, ok_rate                 actions finished (successful) per second          N/s, N/m, N/h, N/8h       yes
//	error_rate                    errors / actions finished                         0.1% or a fraction <= 1   yes
//	errors, dropped               errors; arrivals dropped (open model)             count                     yes
//	loss                          deliveries lost (errors of class "lost")          count                     yes
//	corrupt                       content not what was written (class "corrupt")    count                     yes
//	misdelivered                  mail copies in a mailbox that was no recipient's  count                     no
//	duplicated                    deliveries made again (the "duplicate" events)    count                     no
//	server_cpu                    server machine's % processor time (cpu_pct row)   80% or a fraction <= 1    no
//	server_cpu_ms_per_action      server CPU-ms per action (cpu_ms_per_action row)  number of ms, or duration  no
//	client_bound                  a client-bound interval in the phase              true or false (== or !=)  no
//	valid                         the run's validity verdict (result.Validity)      true or false (== or !=)  no
//
// valid takes no phase: it is judged on each repetition's measured phase
// (steady, or the whole repetition), and is true when every repetition is
// valid.
//
// p999 is read as p99.9. A duration needs its unit ("500" could be ms or
// s); a rate needs its period; a percentage metric takes a plain number
// only as a fraction (0.8 is 80 %).
//
// # Repetitions
//
// For a run with repetitions, a threshold on a level (latencies, rates,
// error_rate, server figures) is judged on the trimmed mean over the kept
// repetitions, as the reports show it (the SMB study's mean of the middle runs);
// a threshold on a count or on client_bound is judged on the worst
// repetition, so a loss or a client-bound interval in a trimmed repetition
// is not hidden. Every repetition's value is in the Outcome.
//
// # Missing data
//
// A threshold whose figure does not exist (a phase the run never reached,
// an action it does not have, no action finished, no server counters)
// fails, and its message says what is missing.
package threshold

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/result"
)

// RowKinds are the prefixes of rows that are not an action of the
// scenario, written KIND:NAME: a journey's own row (journey:buy), a web
// check's (check:logged-in). "journey:buy.p99 < 2s" names the row, not a
// phase; "steady: journey:buy.p99 < 2s" gives both.
var RowKinds = []string{"journey", "check"}

// Threshold is one parsed limit. Values are in the metric's Unit.
type Threshold struct {
	Text   string   // as written, trimmed
	Expr   string   // Text without its phases: "page.p95 < 200ms"
	Phases []string // nil: the default phase; ["*"]: every phase
	Action string   // "" for all actions together
	Metric string   // canonical name: "p95", "error_rate", "server_cpu", ...
	Op     string   // "<", "<=", ">", ">=", "==" or "!="
	Value  float64  // the limit: ms, fraction, per second, count, or 1/0 for true/false
	Unit   string   // Unit of the metric
	// Default is set on a family's default threshold (WithDefaults), not
	// written in the scenario.
	Default bool
}

// String returns the threshold as written.
func (t Threshold) String() string { return t.Text }

// Units of metrics, the unit of Threshold.Value and Outcome.Value.
const (
	Millis = "ms"    // milliseconds
	Ratio  = "ratio" // a fraction, 0..1
	PerSec = "1/s"   // per second
	Count  = "count"
	Bool   = "bool" // 1 for true, 0 for false
)

// metric defines one metric: its unit and whether it exists per action.
type metric struct {
	name      string
	unit      string
	perAction bool
	level     bool // judged on the trimmed mean of repetitions (else on the worst)
}

// quantiles are the latency metrics; service_ before each is service time.
var quantiles = []string{"mean", "p50", "p90", "p95", "p99", "p99.9", "max"}

var metricDefs = func() []metric {
	var ms []metric
	for _, q := range quantiles {
		ms = append(ms, metric{q, Millis, true, true})
	}
	for _, q := range quantiles {
		ms = append(ms, metric{"service_" + q, Millis, true, true})
	}
	return append(ms,
		metric{"rate", PerSec, true, true},
		metric{"ok_rate", PerSec, true, true},
		metric{"error_rate", Ratio, true, true},
		metric{"errors", Count, true, false},
		metric{"dropped", Count, true, false},
		metric{"loss", Count, true, false},
		metric{"misdelivered", Count, false, false},
		metric{"duplicated", Count, false, false},
		metric{"corrupt", Count, true, false},
		metric{"server_cpu", Ratio, false, true},
		metric{"server_cpu_ms_per_action", Millis, false, true},
		metric{"client_bound", Bool, false, false},
		metric{"valid", Bool, false, false},
	)
}()

// aliases are other spellings of metrics.
var aliases = map[string]string{"p999": "p99.9", "service_p999": "service_p99.9"}

// Metrics returns the metric names, in the order of the package doc.
func Metrics() []string {
	names := make([]string, len(metricDefs))
	for i, m := range metricDefs {
		names[i] = m.name
	}
	return names
}

func findMetric(name string) (metric, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, m := range metricDefs {
		if m.name == name {
			return m, true
		}
	}
	return metric{}, false
}

// Phase names a threshold may name, besides "*".
var phaseNames = []string{"ramp-up", "steady", "ramp-down", result.All}

var operators = []string{"<", "<=", ">", ">=", "==", "!="}

// Parse reads one threshold. Its errors say what is wrong in words, with
// the nearest metric or phase name when one is close: an unknown metric or
// phase, a missing or unknown operator, a value without its unit or with a
// unit that does not fit the metric, a per-action metric that is not.
// Action names are not checked here (see CheckAction).
func Parse(text string) (Threshold, error) {
	t := Threshold{Text: strings.TrimSpace(text)}
	s := t.Text
	opAt := strings.IndexAny(s, "<>=!")
	if opAt < 0 {
		return t, fmt.Errorf("threshold %q has no comparison: write METRIC OPERATOR VALUE, like p95 < 500ms", t.Text)
	}
	opEnd := opAt
	for opEnd < len(s) && strings.ContainsRune("<>=!", rune(s[opEnd])) {
		opEnd++
	}
	left, value := strings.TrimSpace(s[:opAt]), strings.TrimSpace(s[opEnd:])
	t.Op = s[opAt:opEnd]
	switch {
	case t.Op == "=":
		return t, fmt.Errorf("threshold %q: bad operator \"=\": write == to compare for equality", t.Text)
	case !slices.Contains(operators, t.Op):
		return t, fmt.Errorf("threshold %q: bad operator %q: want one of %s", t.Text, t.Op, strings.Join(operators, " "))
	case value == "":
		return t, fmt.Errorf("threshold %q has no value after %s", t.Text, t.Op)
	}
	if phases, rest, ok := strings.Cut(left, ":"); ok && !slices.Contains(RowKinds, strings.TrimSpace(phases)) {
		var err error
		if t.Phases, err = parsePhases(phases); err != nil {
			return t, fmt.Errorf("threshold %q: %w", t.Text, err)
		}
		left = strings.TrimSpace(rest)
		t.Expr = strings.TrimSpace(t.Text[strings.Index(t.Text, ":")+1:])
	} else {
		t.Expr = t.Text
	}
	m, action, err := parseMetric(left)
	if err != nil {
		return t, fmt.Errorf("threshold %q: %w", t.Text, err)
	}
	t.Metric, t.Action, t.Unit = m.name, action, m.unit
	if m.name == "valid" && len(t.Phases) > 0 {
		return t, fmt.Errorf("threshold %q: valid takes no phase: it is judged on each repetition's steady phase (or the whole repetition when it has none)", t.Text)
	}
	if t.Value, err = parseValue(m, t.Op, value); err != nil {
		return t, fmt.Errorf("threshold %q: %w", t.Text, err)
	}
	return t, nil
}

func parsePhases(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return []string{"*"}, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(p)), "_", "-")
		if !slices.Contains(phaseNames, p) {
			return nil, fmt.Errorf("unknown phase %q: want %s or *%s", p, strings.Join(phaseNames, ", "), didYouMean(p, phaseNames))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseMetric splits "[action.]metric": the metric is the longest known
// name the text ends with ("page.p99.9" is p99.9 of page).
func parseMetric(s string) (metric, string, error) {
	if s == "" {
		return metric{}, "", fmt.Errorf("no metric before the operator: want one of %s", strings.Join(Metrics(), ", "))
	}
	if m, ok := findMetric(s); ok {
		return m, "", nil
	}
	var best metric
	action := ""
	for i := len(s) - 1; i > 0; i-- {
		if s[i] != '.' {
			continue
		}
		if m, ok := findMetric(s[i+1:]); ok {
			best, action = m, s[:i]
		}
	}
	if action == "" {
		// "page.p59": suggest for "p59"; "p99.8": for the whole.
		name, near, d := s, "", math.MaxInt
		if k, dk := closest(s, Metrics()); k != "" {
			near, d = k, dk
		}
		if i := strings.Index(s, "."); i > 0 {
			if k, dk := closest(s[i+1:], Metrics()); k != "" && dk < d {
				name, near = s[i+1:], k
			}
		}
		hint := ""
		if near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		return metric{}, "", fmt.Errorf("unknown metric %q%s; the metrics are %s", name, hint, strings.Join(Metrics(), ", "))
	}
	if !best.perAction {
		return metric{}, "", fmt.Errorf("%s is not measured per action: write it without %q", best.name, action+".")
	}
	return best, action, nil
}

// parseValue reads a limit in the metric's unit.
func parseValue(m metric, op, v string) (float64, error) {
	v = strings.ReplaceAll(v, " ", "")
	number := func(s string) (float64, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s: %q is not a number", m.name, s)
		}
		if f < 0 {
			return 0, fmt.Errorf("%s: %q is negative", m.name, s)
		}
		return f, nil
	}
	switch m.unit {
	case Bool:
		if op != "==" && op != "!=" {
			return 0, fmt.Errorf("%s is true or false: compare it with == or !=, not %s", m.name, op)
		}
		switch strings.ToLower(v) {
		case "true":
			return 1, nil
		case "false":
			return 0, nil
		}
		return 0, fmt.Errorf("%s is true or false, not %q", m.name, v)
	case Millis:
		if _, err := strconv.ParseFloat(v, 64); err == nil && m.name == "server_cpu_ms_per_action" {
			return number(v) // its name says ms
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			if _, nerr := strconv.ParseFloat(v, 64); nerr == nil {
				return 0, fmt.Errorf("%s needs a duration with its unit, like %sms or %ss: %q alone could be either", m.name, v, v, v)
			}
			return 0, fmt.Errorf("%s: bad duration %q: want a number and a unit (us, ms, s, m), like 500ms or 1.5s", m.name, v)
		}
		if d < 0 {
			return 0, fmt.Errorf("%s: %q is negative", m.name, v)
		}
		return float64(d) / float64(time.Millisecond), nil
	case Ratio:
		if p, ok := strings.CutSuffix(v, "%"); ok {
			f, err := number(p)
			return f / 100, err
		}
		f, err := number(v)
		if err == nil && f > 1 {
			return 0, fmt.Errorf("%s %s would be %g%%: write %s%% for a percentage, or a fraction up to 1", m.name, v, 100*f, v)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: bad value %q: want a percentage like 0.1%% or a fraction like 0.001", m.name, v)
		}
		return f, nil
	case PerSec:
		n, per, ok := strings.Cut(v, "/")
		if !ok {
			if _, err := strconv.ParseFloat(v, 64); err == nil {
				return 0, fmt.Errorf("%s needs its period, like %s/s or %s/m", m.name, v, v)
			}
			return 0, fmt.Errorf("%s: bad rate %q: want a count per period, like 1000/s, 600/m or 20/h", m.name, v)
		}
		f, err := number(n)
		if err != nil {
			return 0, err
		}
		secs, err := period(per)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", m.name, err)
		}
		return f / secs, nil
	default: // Count
		f, err := number(v)
		if err != nil {
			return 0, fmt.Errorf("%s is a count: %q is not a plain number", m.name, v)
		}
		return f, nil
	}
}

// period reads the part after "/" of a rate, in seconds: s, m, min, h, or a
// duration like 8h.
func period(p string) (float64, error) {
	switch p {
	case "s", "sec":
		return 1, nil
	case "m", "min":
		return 60, nil
	case "h":
		return 3600, nil
	}
	d, err := time.ParseDuration(p)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad period %q: want s, m, h or a duration like 8h", p)
	}
	return d.Seconds(), nil
}

// WithDefaults returns the scenario's thresholds followed by a family's
// defaults (each marked Default), except a default on a metric that one of
// the scenario's thresholds already judges: the scenario's own replaces
// it, whatever its phases or action. So "corrupt <= 3" raises the files
// family's "all: corrupt == 0", and "corrupt >= 0" lets any count pass
// (the count is still shown). An error is a default that does not parse:
// the family's mistake, not the user's.
func WithDefaults(ts []Threshold, defaults []string) ([]Threshold, error) {
	out := slices.Clone(ts)
	for _, text := range defaults {
		d, err := Parse(text)
		if err != nil {
			return nil, fmt.Errorf("a default threshold: %w", err)
		}
		if slices.ContainsFunc(ts, func(t Threshold) bool { return t.Metric == d.Metric }) {
			continue
		}
		d.Default = true
		out = append(out, d)
	}
	return out, nil
}

// CheckAction reports an action the run's scenario does not have, with
// the nearest name; nil when the threshold names no action or a known one.
// The scenario's validation can call it with the scenario's action names.
func (t Threshold) CheckAction(actions []string) error {
	if t.Action == "" || slices.Contains(actions, t.Action) {
		return nil
	}
	return fmt.Errorf("threshold %q: no action named %q%s; the actions are %s", t.Text, t.Action,
		didYouMean(t.Action, actions), strings.Join(actions, ", "))
}

// didYouMean returns ` (did you mean "x"?)` for the known name closest to s,
// or "" when none is close.
func didYouMean(s string, known []string) string {
	if k, _ := closest(s, known); k != "" {
		return fmt.Sprintf(" (did you mean %q?)", k)
	}
	return ""
}

// closest returns the known name nearest to s and its distance, or "" when
// none is within about half of s. Between names as near, one made of the
// same letters wins ("p59" is nearer p95 than p50).
func closest(s string, known []string) (string, int) {
	best, bestD, bestSame := "", len(s)/2+2, false
	for _, k := range known {
		d, same := editDistance(s, k), sameLetters(s, k)
		if d < bestD || d == bestD && same && !bestSame && best != "" {
			best, bestD, bestSame = k, d, same
		}
	}
	return best, bestD
}

func sameLetters(a, b string) bool {
	x, y := []byte(a), []byte(b)
	slices.Sort(x)
	slices.Sort(y)
	return string(x) == string(y)
}

// editDistance counts the insertions, deletions, substitutions and swaps of
// adjacent letters that turn a into b ("p59" is one swap from "p95").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
