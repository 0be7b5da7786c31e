package scenario

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Append adds text to the list at a key path ("counters.processes"), as a
// repeatable command-line flag does.
func (s *Scenario) Append(path, flag, text string) {
	v := s.field(path)
	if v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.String {
		panic("scenario: Append to a path that is not a list of strings: " + path)
	}
	v.Set(reflect.Append(v, reflect.ValueOf(text)))
	s.origin[path] = flag
	s.origin[fmt.Sprintf("%s[%d]", path, v.Len()-1)] = flag
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

// Set overrides the value at a key path ("users", "phases.steady") with text
// given on the command line by flag. The text is parsed as the file would be
// (units included). Call Validate afterwards: its messages name the flag.
func (s *Scenario) Set(path, flag, text string) error {
	v := s.field(path)
	bad := func(err error) error {
		return &Error{File: "flag " + flag, Path: path, Msg: err.Error()}
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
	s.origin[path] = flag
	return nil
}
