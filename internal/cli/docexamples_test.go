package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/threshold"
	"github.com/throng-io/throng/presets"
)

// docThreshold is a threshold written in the documentation, and where.
type docThreshold struct{ text, where string }

var (
	// `--threshold "p95 < 500ms"` or with single quotes.
	flagRe = regexp.MustCompile(`--threshold\s+["']([^"']+)["']`)
	// An inline code span that reads like a threshold: `deliver.p99 < 5s`.
	spanRe = regexp.MustCompile("`([A-Za-z0-9_.,*: -]+\\s*(?:<=|>=|==|!=|<|>)\\s*[A-Za-z0-9_.%/]+)`")
	// A list item of a thresholds: block in a code block, its comment cut.
	itemRe = regexp.MustCompile(`^\s*-\s*"?([^"#]+?)"?\s*(#.*)?$`)
)

// docThresholds extracts every threshold example from the README and the
// docs: thresholds: blocks in code, --threshold flags, inline spans.
func docThresholds(t *testing.T) []docThreshold {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	var out []docThreshold
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inCode, inBlock, indent := false, false, 0
		for i, line := range strings.Split(string(b), "\n") {
			where := filepath.Base(f) + ":" + itoa(i+1)
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode, inBlock = !inCode, false
				continue
			}
			for _, m := range flagRe.FindAllStringSubmatch(line, -1) {
				out = append(out, docThreshold{m[1], where})
			}
			if inCode {
				ind := len(line) - len(strings.TrimLeft(line, " "))
				switch {
				case strings.TrimSpace(line) == "thresholds:":
					inBlock, indent = true, ind
				case inBlock && (ind <= indent && !strings.HasPrefix(strings.TrimSpace(line), "-") || strings.TrimSpace(line) == ""):
					inBlock = false
				case inBlock:
					if m := itemRe.FindStringSubmatch(line); m != nil {
						out = append(out, docThreshold{strings.TrimSpace(m[1]), where})
					}
				}
				continue
			}
			for _, m := range spanRe.FindAllStringSubmatch(line, -1) {
				out = append(out, docThreshold{m[1], where})
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// Every threshold the docs show is accepted by throng run's own check
// (parsed, its action known to the scenario or to its driver's events)
// and evaluates to a figure on a run that has what it names. A doc example
// that does not run is a defect: `deliver.p99 < 5s` was refused ("no
// action named deliver") because only the scenario's actions were known.
func TestDocThresholdExamples(t *testing.T) {
	examples := docThresholds(t)
	if len(examples) < 10 {
		t.Fatalf("found only %d threshold examples in the docs: %v", len(examples), examples)
	}
	var texts []string
	for _, ex := range examples {
		texts = append(texts, ex.text)
	}
	for _, must := range []string{"deliver.p99 < 5s", "p95 < 500ms", "all: loss == 0", "search.p99 <= 1s", "client_bound == false", "valid == true"} {
		if !slices.Contains(texts, must) {
			t.Errorf("the docs no longer show %q (found %q)", must, texts)
		}
	}
	for _, ex := range examples {
		t.Run(ex.where+" "+ex.text, func(t *testing.T) {
			th, err := threshold.Parse(ex.text)
			if err != nil {
				t.Fatalf("%s: %v", ex.where, err)
			}
			// Through run's preparation (as --threshold), with a scenario
			// of the family that has the action: mail for the driver's
			// events, else web.
			job, err := placeholderPreparer(t.TempDir()).Prepare(context.Background(), runner.Request{
				Source: docScenario(th.Action), Settings: []runner.Setting{setting("thresholds", ex.text)}})
			if err != nil {
				t.Fatalf("%s: throng run refuses it: %v", ex.where, err)
			}
			job.Close()
			actions := []string{"page", "search"}
			if th.Action != "" && !slices.Contains(actions, th.Action) {
				actions = append(actions, th.Action)
			}
			for _, o := range th.Evaluate(docRun(actions)) {
				if math.IsNaN(o.Value) {
					t.Errorf("%s: no figure: %s", ex.where, o.Message)
				}
			}
		})
	}
}

// docScenario is a scenario with the action a threshold names.
func docScenario(action string) runner.Source {
	switch action {
	case "deliver", "log-on":
		file, src, _ := presets.Source("loadsim-online")
		return runner.Source{File: file, Text: src}
	case "connect": // pub/sub's and the files family's (SMB) event
		file, src, _ := presets.Source("ipush-1")
		return runner.Source{File: file, Text: src}
	}
	src := "name: doc\nusers: 1\nphases:\n  steady: 1s\nactions:\n  - name: page\n    path: /\n  - name: search\n    path: /s\n"
	if action != "" && action != "page" && action != "search" {
		src += "  - name: " + action + "\n    path: /x\n"
	}
	return runner.Source{File: "doc.yaml", Text: []byte(src)}
}

// docRun is a finished run with every phase, the given actions and server
// counters: every documented figure exists in it.
func docRun(actions []string) *result.Run {
	rep := result.Repetition{}
	for i, ph := range []string{"ramp-up", "steady", "steady", "steady", "steady", "steady", "ramp-down"} {
		acts := make([]result.ActionInterval, len(actions))
		for a := range actions {
			var s metrics.ActionSnapshot
			for k := 0; k < 300; k++ {
				s.Latency.Record(uint64(1000 + k))
				s.Service.Record(uint64(500 + k))
			}
			s.Count = 300
			acts[a] = result.FromSnapshot(&s)
		}
		rep.Intervals = append(rep.Intervals, result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: ph, UsersMean: 10,
			Actions: acts,
			Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{"cpus": 2,
				"cpu_user_seconds_total": 0.6, "cpu_nice_seconds_total": 0, "cpu_system_seconds_total": 0.4, "cpu_irq_seconds_total": 0,
				"cpu_softirq_seconds_total": 0, "cpu_steal_seconds_total": 0}}}})
	}
	rep.Summaries = result.Summarize(actions, 0, rep.Intervals)
	return &result.Run{Schema: result.Schema, Meta: result.Meta{Actions: actions, IntervalS: 1, Model: "closed"}, Repetitions: []result.Repetition{rep}}
}
