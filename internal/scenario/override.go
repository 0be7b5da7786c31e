package scenario

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Given is a value given from outside the file for a key path, and where
// it came from: From names it in messages as a file name would ("flag
// --users" for a command-line flag, "settings" for a runner's settings),
// so that every problem with it still says where.
type Given struct {
	Text string
	From string
}

// Append adds a value to the list at a key path ("counters.processes"), as
// a repeatable command-line flag does.
func (s *Scenario) Append(path string, g Given) {
	v := s.field(path)
	if v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.String {
		panic("scenario: Append to a path that is not a list of strings: " + path)
	}
	v.Set(reflect.Append(v, reflect.ValueOf(g.Text)))
	s.origin[path] = g.From
	s.origin[fmt.Sprintf("%s[%d]", path, v.Len()-1)] = g.From
}

// field returns the settable value at a key path.
func (s *Scenario) field(path string) reflect.Value {
	v := reflect.ValueOf(s).Elem()
	for _, key := range strings.Split(path, ".") {
		byName, _, _ := structFields(v.Type())
		i, ok := byName[key]
		if !ok {
			panic("scenario: unknown path " + path)
		}
		v = v.Field(i)
	}
	return v
}

// Set overrides the value at a key path ("users", "phases.steady") with a
// value given from outside the file. Its text is parsed as the file's would
// be (units included). Call Validate afterwards: its messages name where
// the value came from (g.From).
func (s *Scenario) Set(path string, g Given) error {
	v := s.field(path)
	text := g.Text
	bad := func(err error) error {
		return &Error{File: g.From, Path: path, Msg: err.Error()}
	}
	if tu, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := tu.UnmarshalText([]byte(text)); err != nil {
			return bad(err)
		}
	} else {
		switch v.Kind() {
		case reflect.String:
			v.SetString(text)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
			if err != nil {
				return bad(fmt.Errorf("%q is not a whole number", text))
			}
			v.SetInt(n)
		case reflect.Bool:
			b, err := strconv.ParseBool(text)
			if err != nil {
				return bad(fmt.Errorf("%q is not true or false", text))
			}
			v.SetBool(b)
		case reflect.Float64:
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return bad(fmt.Errorf("%q is not a number", text))
			}
			v.SetFloat(f)
		default:
			panic("scenario: Set cannot set " + v.Type().String())
		}
	}
	s.origin[path] = g.From
	return nil
}

// AllowLocalTargets names the URL schemes whose targets are local paths
// without a host (the files family's file:///mnt/share): Validate accepts
// a target of these schemes without a host. The scenario's family declares
// them (driver.Family.LocalSchemes); no scheme is allowed otherwise.
func (s *Scenario) AllowLocalTargets(schemes []string) {
	s.localSchemes = append([]string(nil), schemes...)
}
