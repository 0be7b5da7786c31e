package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/throng-io/throng/internal/scenario"
)

// Setting is one value given for a scenario key path, in place of the
// file's: "users" = "20", "open.rate" = "500/s", "vars.size" = "8KB". The
// value is text, parsed as the file's would be (units included). Settings
// are how a command line, a controller (over the agent wire: Key and Value
// only) and a capacity search change a scenario; the keys are the
// scenario's own, never a command's flags.
//
// The keys:
//
//	users, phases.steady, closed.iterations, closed.total, open.rate,
//	speedup, target, runs, trim, seed, label, interval, max_duration,
//	engine.kind, engine.threads    replace the value
//	counters.processes, counters.node_exporter, thresholds
//	                               add one item to the list
//	vars.NAME                      give the scenario's variable NAME a value
//	                               (declared in its vars:)
//
// Two rules join them: closed.iterations replaces the scenario's
// closed.total and the other way round (a count per user and a shared
// count exclude each other), unless both are set; and open.rate gives the
// scenario's variable "rate" when it declares one (presets whose rates are
// built from it), else the open model's aggregate rate.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// From names where the value came from, in messages, as a file name
	// would ("flag --users"); "" reads "settings". It stays on this side
	// of the agent wire: an agent's messages say "settings".
	From string `json:"-"`
}

func (st Setting) given() scenario.Given {
	from := st.From
	if from == "" {
		from = "settings"
	}
	return scenario.Given{Text: st.Value, From: from}
}

// scalarKeys are the keys whose value a setting replaces; listKeys those
// to which it adds an item.
var (
	scalarKeys = []string{"users", "phases.steady", "closed.iterations", "closed.total", "open.rate", "speedup", "target",
		"runs", "trim", "seed", "label", "interval", "max_duration", "engine.kind", "engine.threads"}
	listKeys = []string{"counters.processes", "counters.node_exporter", "thresholds"}
)

// varPrefix starts the key of a variable's setting.
const varPrefix = "vars."

// CheckKey returns nil when a setting may change key, else why not.
func CheckKey(key string) error {
	if slices.Contains(scalarKeys, key) || slices.Contains(listKeys, key) {
		return nil
	}
	if name, ok := strings.CutPrefix(key, varPrefix); ok {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, ".[]") {
			return fmt.Errorf("%q names no variable (want vars.NAME)", key)
		}
		return nil
	}
	return fmt.Errorf("%q is not a key a setting may change (%s, %s, or vars.NAME)", key,
		strings.Join(scalarKeys, ", "), strings.Join(listKeys, ", "))
}

// Load reads a request's scenario and applies its settings, the variables
// first (every value of the file may use them); nothing is validated yet.
// A text that is no scenario at all, or a setting that cannot apply, is an
// *Error of kind BadInput.
func (p *Preparer) Load(req Request) (*Loaded, error) {
	for _, st := range req.Settings {
		if err := CheckKey(st.Key); err != nil {
			return nil, badInput(fmt.Errorf("%s: %w", st.given().From, err))
		}
	}
	vars := map[string]scenario.Given{}
	var rate *Setting
	var rest []Setting
	for _, st := range req.Settings {
		switch {
		case strings.HasPrefix(st.Key, varPrefix):
			vars[strings.TrimPrefix(st.Key, varPrefix)] = st.given()
		case st.Key == "open.rate":
			rate = &st
			rest = append(rest, st)
		default:
			rest = append(rest, st)
		}
	}
	s, problems, err := p.decode(req.Source, vars)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Vars["rate"]; ok && rate != nil {
		vars["rate"] = rate.given()
		if s, problems, err = p.decode(req.Source, vars); err != nil {
			return nil, err
		}
		rest = slices.DeleteFunc(rest, func(st Setting) bool { return st.Key == "open.rate" })
	}
	given := map[string]string{}
	for name, g := range vars {
		given[varPrefix+name] = g.Text
	}
	from := map[string]string{}
	for _, st := range rest {
		g := st.given()
		from[st.Key] = g.From
		if slices.Contains(listKeys, st.Key) {
			s.Append(st.Key, g)
			given[st.Key] = strings.TrimPrefix(given[st.Key]+","+st.Value, ",")
			continue
		}
		if err := s.Set(st.Key, g); err != nil {
			return nil, badInput(err)
		}
		given[st.Key] = st.Value
	}
	// A count per user and a shared count exclude each other: the one set
	// replaces the scenario's other one.
	_, iters := given["closed.iterations"]
	_, total := given["closed.total"]
	if iters != total {
		other, by := "closed.total", "closed.iterations"
		if total {
			other, by = "closed.iterations", "closed.total"
		}
		if err := s.Set(other, scenario.Given{Text: "0", From: from[by]}); err != nil {
			return nil, badInput(err)
		}
	}
	return &Loaded{Scenario: s, req: req, problems: problems, given: given}, nil
}

// decode decodes a scenario's text with values for its variables. It
// returns either a scenario, with the problems found while decoding it (to
// be reported with the validation's), or, when the text is no scenario at
// all (a YAML syntax error, an empty file), an error and no scenario:
// never a nil scenario without an error.
func (p *Preparer) decode(src Source, vars map[string]scenario.Given) (*scenario.Scenario, scenario.Errors, error) {
	s, err := scenario.DecodeVars(src.File, src.Text, p.Names(), vars)
	if s == nil {
		if err == nil {
			err = fmt.Errorf("%s: no scenario could be read", src.File)
		}
		return nil, nil, badInput(err)
	}
	var problems scenario.Errors
	if err != nil && !errors.As(err, &problems) {
		return nil, nil, badInput(err)
	}
	return s, problems, nil
}
