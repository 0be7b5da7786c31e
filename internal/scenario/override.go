package scenario

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Set overrides the value at a key path ("users", "phases.steady") with text
// given on the command line by flag. The text is parsed as the file would be
// (units included). Call Validate afterwards: its messages name the flag.
func (s *Scenario) Set(path, flag, text string) error {
	v := reflect.ValueOf(s).Elem()
	for _, key := range strings.Split(path, ".") {
		byName, _, _ := structFields(v.Type())
		i, ok := byName[key]
		if !ok {
			panic("scenario: Set of unknown path " + path)
		}
		v = v.Field(i)
	}
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
