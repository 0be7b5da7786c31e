package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Load reads, decodes and validates a scenario file. drivers lists the
// protocol families known to the program; the file must contain exactly one
// of their blocks or none (then the first one, "web", is assumed). Every
// problem is reported, as Errors, each with file:line:col.
func Load(path string, drivers []string) (*Scenario, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src, drivers)
}

// Parse decodes and validates a scenario from src; file names it in
// messages. It never panics: malformed input is an error.
func Parse(file string, src []byte, drivers []string) (*Scenario, error) {
	s, err := Decode(file, src, drivers)
	if err != nil {
		return s, err
	}
	if errs := s.Validate(); len(errs) > 0 {
		SortErrors(errs)
		return s, Errors(errs)
	}
	return s, nil
}

// Decode decodes a scenario from src without validating the values, so that
// command-line overrides can be applied before Validate. Syntax errors, wrong
// types and unknown keys are reported. It never panics.
func Decode(file string, src []byte, drivers []string) (s *Scenario, err error) {
	return DecodeVars(file, src, drivers, nil)
}

// DecodeVars is Decode with values for the scenario's variables, by name
// (from --set name=value); each must be declared in the scenario's vars.
func DecodeVars(file string, src []byte, drivers []string, set map[string]Given) (s *Scenario, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, Errors{&Error{File: file, Msg: fmt.Sprintf("internal error while reading this file (%v); please report it", r)}}
		}
	}()
	f, perr := parseYAML(file, src)
	if perr != nil {
		return nil, Errors{perr}
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, directive := d.Body.(*ast.DirectiveNode); directive {
			continue // %YAML 1.2 before the document
		}
		docs = append(docs, d.Body)
	}
	if len(docs) == 0 {
		return nil, Errors{&Error{File: file, Msg: emptyMessage(src)}}
	}
	if len(docs) > 1 {
		return nil, Errors{&Error{File: file, Pos: posOf(docs[1]), Msg: "a scenario file holds one YAML document; this is a second one"}}
	}
	if _, ok := unwrap(nil, docs[0]).(*ast.MappingNode); !ok {
		if _, ok := docs[0].(*ast.MappingValueNode); !ok {
			return nil, Errors{&Error{File: file, Pos: posOf(docs[0]), Msg: fmt.Sprintf("a scenario is a mapping of keys (name, users, actions, ...), got %s", nodeKind(unwrap(nil, docs[0])))}}
		}
	}
	src2 := &source{file: file, text: src, values: MaxValues}
	if err := src2.collectAnchors(docs[0]); err != nil {
		return nil, Errors{err}
	}

	s = newScenario()
	s.File = file
	s.Source = src
	d := &decoder{src: src2, pos: s.pos}
	d.decodeVars(docs[0], s, set)
	root := reflect.ValueOf(s).Elem()
	d.decodeTopLevel(docs[0], root, drivers)
	s.bindDrivers(d, drivers)
	s.applyDefaults()
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if src2.exhausted != nil {
		// The rest is noise: the decoder stopped expanding.
		return nil, Errors{src2.exhausted}
	}
	s.failed = map[string]bool{}
	for _, e := range d.errs {
		var se *Error
		if errors.As(e, &se) && se.Path != "" {
			s.failed[se.Path] = true
		}
	}
	if len(d.errs) > 0 {
		SortErrors(d.errs)
		return s, Errors(d.errs)
	}
	return s, nil
}

// emptyMessage says what a file without a YAML document holds.
func emptyMessage(src []byte) string {
	text := strings.TrimSpace(string(bytes.TrimPrefix(src, utf8BOM)))
	switch {
	case text == "":
		return "the file is empty: a scenario needs at least users and actions"
	case strings.Trim(text, "-.\n\r\t ") == "":
		return "the file holds only document markers (---, ...): a scenario needs at least users and actions"
	}
	return "the file holds only comments: a scenario needs at least users and actions"
}

// decodeVars reads the scenario's vars first (every other value may refer
// to them) and applies the command line's values.
func (d *decoder) decodeVars(n ast.Node, s *Scenario, set map[string]Given) {
	m, ok := unwrap(d.src, n).(*ast.MappingNode)
	if !ok {
		return
	}
	for _, mv := range d.entries(m) {
		if keyText(mv.Key) == "vars" {
			d.pos["vars"] = posOf(mv.Key)
			d.decode(mv.Value, reflect.ValueOf(&s.Vars).Elem(), "vars")
		}
	}
	if s.Vars == nil {
		s.Vars = map[string]string{}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := s.Vars[k]; !ok {
			d.errs = append(d.errs, &Error{File: set[k].From, Path: "vars." + k, Msg: fmt.Sprintf("the scenario has no variable %q (its vars: %s)", k, strings.Join(sortedNames(s.Vars), ", "))})
			continue
		}
		s.Vars[k] = set[k].Text
		s.origin["vars."+k] = set[k].From
	}
	d.src.vars = s.Vars
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// decodeTopLevel decodes the root mapping; keys that are not Scenario fields
// are kept in s.extra for bindDrivers.
func (d *decoder) decodeTopLevel(n ast.Node, root reflect.Value, drivers []string) {
	m, ok := unwrap(d.src, n).(*ast.MappingNode)
	if !ok {
		d.errorf(n, "", "a scenario is a mapping of keys (name, users, actions, ...), got %s", nodeKind(unwrap(d.src, n)))
		return
	}
	s := root.Addr().Interface().(*Scenario)
	byName, _, _ := structFields(root.Type())
	var known, extra []*ast.MappingValueNode
	for _, mv := range d.entries(m) {
		if keyText(mv.Key) == "vars" {
			continue // read first, by decodeVars
		}
		if _, ok := byName[keyText(mv.Key)]; ok {
			known = append(known, mv)
		} else {
			extra = append(extra, mv)
		}
	}
	d.decodeStruct(&ast.MappingNode{BaseNode: &ast.BaseNode{}, Start: m.Start, Values: known}, root, "")
	if len(extra) > 0 {
		s.extra = Node{node: &ast.MappingNode{BaseNode: &ast.BaseNode{}, Start: m.Start, Values: extra}, src: d.src}
	}
}

// bindDrivers finds the driver block among the extra top-level keys; any other
// extra key is an unknown key.
func (s *Scenario) bindDrivers(d *decoder, drivers []string) {
	if s.extra.node != nil {
		_, names, _ := structFields(reflect.TypeFor[Scenario]())
		known := append(append([]string(nil), names...), drivers...)
		sort.Strings(known)
		for _, mv := range s.extra.node.(*ast.MappingNode).Values {
			key := keyText(mv.Key)
			isDriver := false
			for _, dr := range drivers {
				if key == dr {
					isDriver = true
				}
			}
			if !isDriver {
				msg := fmt.Sprintf("unknown key %q", key)
				if sg := suggest(key, known); sg != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", sg)
				} else {
					msg += "; known keys: " + strings.Join(known, ", ")
				}
				d.errorf(mv.Key, key, "%s", msg)
				continue
			}
			if s.Driver != "" {
				d.errorf(mv.Key, key, "a scenario has one protocol block; %q is already given", s.Driver)
				continue
			}
			s.Driver = key
			s.pos[key] = posOf(mv.Key)
			s.DriverConfig = Node{node: mv.Value, src: d.src, path: key}
		}
	}
	if s.Driver == "" && len(drivers) > 0 {
		s.Driver = drivers[0]
		s.DriverConfig = Node{src: d.src, path: drivers[0]}
	}
	for i := range s.Actions {
		s.Actions[i].Params.src = d.src
	}
	for j := range s.Journeys {
		for k := range s.Journeys[j].Steps {
			s.Journeys[j].Steps[k].Params.src = d.src
			s.Journeys[j].Steps[k].Node.src = d.src
		}
	}
	for g := range s.Groups {
		for i := range s.Groups[g].Actions {
			s.Groups[g].Actions[i].Params.src = d.src
		}
		for j := range s.Groups[g].Journeys {
			for k := range s.Groups[g].Journeys[j].Steps {
				s.Groups[g].Journeys[j].Steps[k].Params.src = d.src
				s.Groups[g].Journeys[j].Steps[k].Node.src = d.src
			}
		}
	}
}

// applyDefaults fills what the file left out and depends on other values.
func (s *Scenario) applyDefaults() {
	s.defaultActions(s.Actions, "actions")
	s.normalizeGroups()
	s.normalizeJourneys()
}

// defaultActions gives the actions of a list at path their default weight
// and name, and their driver keys their path.
func (s *Scenario) defaultActions(actions []Action, path string) {
	for i := range actions {
		a := &actions[i]
		ap := fmt.Sprintf("%s[%d]", path, i)
		if _, ok := s.pos[ap+".weight"]; !ok {
			a.Weight = 1
		}
		if a.Name == "" {
			a.Name = fmt.Sprintf("action%d", i+1)
		}
		a.path = ap
		if a.Params.node == nil {
			a.Params = Node{src: a.Params.src, path: ap}
		} else {
			a.Params.path = ap
		}
	}
}

// Has reports whether the file (or a flag) set the key at path, like
// "phases.steady" or "closed.iterations".
// A block is set when any key inside it is.
func (s *Scenario) Has(path string) bool {
	if _, ok := s.pos[path]; ok {
		return true
	}
	if _, ok := s.origin[path]; ok {
		return true
	}
	for p := range s.origin {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// Errorf returns an error about the value at path, positioned where the file
// sets it, or naming where a value given from outside came from (Given's
// From). When the key is absent, the error points at the closest enclosing
// key that is present.
func (s *Scenario) Errorf(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if from, ok := s.origin[path]; ok {
		return &Error{File: from, Path: path, Msg: msg}
	}
	p := path
	for {
		if pos, ok := s.pos[p]; ok {
			return &Error{File: s.File, Pos: pos, Path: path, Msg: msg}
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return &Error{File: s.File, Path: path, Msg: msg}
}
