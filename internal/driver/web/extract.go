package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/theory/jsonpath"

	"github.com/throng-io/throng/internal/scenario"
)

// extractSpec is one entry of a step's extract block: where a value comes
// from. Exactly one source is given.
type extractSpec struct {
	JSON   string `yaml:"json"`   // an RFC 9535 JSONPath: $.token, $.items[0].id
	Regex  string `yaml:"regex"`  // a regular expression over the body: its first group, or the whole match
	Header string `yaml:"header"` // a response header (the last response's, after redirects)
	Cookie string `yaml:"cookie"` // a cookie the user holds for the request's URL (after the response)
	HTML   string `yaml:"html"`   // an HTML element by selector (see selector): its attr, or its text
	Attr   string `yaml:"attr"`   // with html: the attribute (default: value for input, href for a, else the text)
	// Default is the value when the source has none; without it, a missing
	// value fails the step in class check, naming the extractor.
	Default *string `yaml:"default"`
}

// extractor sets one variable of the user from a response.
type extractor struct {
	name   string // the variable
	kind   string // json, regex, header, cookie, html
	source string // as written, for messages
	path   *jsonpath.Path
	re     *regexp.Regexp
	header string
	cookie string
	sel    *selector
	attr   string
	def    *string
}

// compileExtract decodes a step's extract block (a mapping of variable
// names to sources), in the order of the names.
func compileExtract(block scenario.Node) ([]*extractor, []error) {
	var specs map[string]scenario.Node
	errs := block.Decode(&specs)
	names := make([]string, 0, len(specs))
	for k := range specs {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []*extractor
	for _, name := range names {
		n := specs[name]
		if !validName(name) {
			errs = append(errs, block.Errorf(name, "variable name %q: letters, digits and _, starting with a letter (it is read as {{ .%s }})", name, name))
			continue
		}
		if contains(builtinVars, name) {
			errs = append(errs, block.Errorf(name, "%q is a built-in variable: extract into another name", name))
			continue
		}
		var s extractSpec
		if es := n.Decode(&s); len(es) > 0 {
			errs = append(errs, es...)
			continue
		}
		e := &extractor{name: name, def: s.Default, attr: s.Attr}
		given := 0
		for _, src := range []struct{ kind, v string }{{"json", s.JSON}, {"regex", s.Regex}, {"header", s.Header}, {"cookie", s.Cookie}, {"html", s.HTML}} {
			if src.v != "" {
				given++
				e.kind, e.source = src.kind, src.v
			}
		}
		if given != 1 {
			errs = append(errs, block.Errorf(name, "extractor %s: give one source of json, regex, header, cookie or html", name))
			continue
		}
		if s.Attr != "" && e.kind != "html" {
			errs = append(errs, n.Errorf("attr", "attr goes with html"))
		}
		var err error
		switch e.kind {
		case "json":
			if e.path, err = jsonpath.Parse(s.JSON); err != nil {
				v, _ := n.Get("json")
				errs = append(errs, v.ErrorAt(0, "extractor %s: JSONPath %q: %v", name, s.JSON, jsonpathMessage(err)))
			}
		case "regex":
			if e.re, err = regexp.Compile(s.Regex); err != nil {
				v, _ := n.Get("regex")
				errs = append(errs, v.ErrorAt(0, "extractor %s: %v", name, err))
			} else if e.re.NumSubexp() > 1 {
				v, _ := n.Get("regex")
				errs = append(errs, v.ErrorAt(0, "extractor %s: the expression has %d groups: keep one (the value) and write others as (?:...)", name, e.re.NumSubexp()))
			}
		case "header":
			e.header = http.CanonicalHeaderKey(s.Header)
		case "cookie":
			e.cookie = s.Cookie
		case "html":
			if e.sel, err = parseSelector(s.HTML); err != nil {
				v, _ := n.Get("html")
				errs = append(errs, v.ErrorAt(0, "extractor %s: %v", name, err))
			}
		}
		out = append(out, e)
	}
	return out, errs
}

func jsonpathMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "jsonpath: ")
}

// validName reports whether name can be read as {{ .name }}.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// response is what extractors and checks read of one answer.
type response struct {
	status  int
	header  http.Header
	body    []byte
	cookies func(name string) (string, bool)
	json    any // the body decoded as JSON, once, when asked
	jsonErr error
	jsonOK  bool
	html    *htmlDoc
}

// decodedJSON returns the body as JSON, decoding it the first time.
func (r *response) decodedJSON() (any, error) {
	if !r.jsonOK {
		r.jsonOK = true
		d := json.NewDecoder(bytes.NewReader(r.body))
		d.UseNumber()
		r.jsonErr = d.Decode(&r.json)
		if r.jsonErr != nil {
			r.jsonErr = fmt.Errorf("the body is not JSON (%v)", r.jsonErr)
		}
	}
	return r.json, r.jsonErr
}

// extract returns the extractor's value from r, or an error naming it.
func (e *extractor) extract(r *response) (string, error) {
	v, ok, err := e.value(r)
	if err == nil && !ok {
		err = fmt.Errorf("extractor %s (%s %s) found nothing", e.name, e.kind, e.source)
	}
	if err != nil {
		if e.def != nil {
			return *e.def, nil
		}
		return "", err
	}
	return v, nil
}

func (e *extractor) value(r *response) (string, bool, error) {
	switch e.kind {
	case "json":
		doc, err := r.decodedJSON()
		if err != nil {
			return "", false, fmt.Errorf("extractor %s (json %s): %v", e.name, e.source, err)
		}
		nodes := e.path.Select(doc)
		if len(nodes) == 0 {
			return "", false, nil
		}
		return jsonText(nodes[0]), true, nil
	case "regex":
		m := e.re.FindSubmatch(r.body)
		if m == nil {
			return "", false, nil
		}
		return string(m[len(m)-1]), true, nil
	case "header":
		vs := r.header[e.header]
		if len(vs) == 0 {
			return "", false, nil
		}
		return vs[0], true, nil
	case "cookie":
		if r.cookies == nil {
			return "", false, nil
		}
		v, ok := r.cookies(e.cookie)
		return v, ok, nil
	case "html":
		doc := r.htmlDoc()
		return doc.find(e.sel, e.attr)
	}
	return "", false, nil
}

// jsonText is a selected JSON value as text: a string as is, anything
// else in its JSON form.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
