package scenario

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Node is a part of a scenario file kept undecoded, so that the driver it
// belongs to can decode it later with the same strict rules and positions.
// The zero Node is an absent block.
type Node struct {
	node ast.Node
	src  *source
	path string
}

// IsZero reports whether the block was absent or null in the file.
func (n Node) IsZero() bool { return n.node == nil || isNull(n.node) }

// Path is the dotted key path of the block, like "web" or "actions[2]".
func (n Node) Path() string { return n.path }

// Pos is the position of the block in its file.
func (n Node) Pos() Pos { return posOf(n.node) }

// Decode decodes the block into v (a pointer to a struct) strictly: an
// unknown key, a duplicate key or a wrong type is an error with its position.
// It returns every problem found, not only the first.
func (n Node) Decode(v any) []error {
	if n.node == nil {
		return nil
	}
	d := &decoder{src: n.src, pos: map[string]Pos{}}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("scenario: Node.Decode needs a non-nil pointer")
	}
	d.decode(n.node, rv.Elem(), n.path)
	if src := n.src; src.exhausted != nil {
		// Said once, by the first block that ran out; nothing else counts.
		if src.exhaustedSaid {
			return nil
		}
		src.exhaustedSaid = true
		return []error{src.exhausted}
	}
	return d.errs
}

// Errorf returns an error positioned at the block, for problems a driver
// finds when it checks the values it decoded (key is appended to the path).
func (n Node) Errorf(key, format string, args ...any) error {
	path := n.path
	if key != "" {
		path = joinPath(path, key)
	}
	pos := n.Pos()
	if m, ok := unwrap(n.src, n.node).(*ast.MappingNode); ok && key != "" {
		for _, mv := range m.Values {
			if keyText(mv.Key) == key {
				pos = posOf(mv.Key)
			}
		}
	}
	file := ""
	if n.src != nil {
		file = n.src.file
	}
	return &Error{File: file, Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// source is one parsed file: its name, what its aliases stand for, and
// how many more values decoding it may visit.
type source struct {
	file    string
	text    []byte                      // the file's text, for positions inside values
	aliases map[*ast.AliasNode]ast.Node // the anchored value of each alias
	vars    map[string]string           // the scenario's variables, flags applied
	// values is how many more values the decoders of this file may visit,
	// aliases expanded (MaxValues at first); exhausted is the error given
	// when none are left, after which nothing more is decoded.
	values        int
	exhausted     error
	exhaustedSaid bool
}

// varRef returns the value of a scalar that is exactly a variable reference,
// "$name", when the scenario declares that variable.
func (src *source) varRef(n ast.Node) (string, bool) {
	sn, ok := n.(*ast.StringNode)
	if !ok || src == nil || len(sn.Value) < 2 || sn.Value[0] != '$' {
		return "", false
	}
	v, ok := src.vars[sn.Value[1:]]
	return v, ok
}

type decoder struct {
	src   *source
	errs  []error
	pos   map[string]Pos // key path -> position of the key, for later checks
	depth int            // nesting of the value being decoded, aliases expanded
}

// visit counts one value against the file's budget and the nesting bound;
// false means stop: the file expands to too many values, or too deep.
func (d *decoder) visit(n ast.Node) bool {
	src := d.src
	if src.exhausted != nil {
		return false
	}
	src.values--
	switch {
	case src.values < 0:
		src.exhausted = &Error{File: src.file, Pos: posOf(n), Msg: fmt.Sprintf("more than %d values, aliases expanded: too large for a scenario file (an alias bomb?)", MaxValues)}
	case d.depth > 4*MaxDepth:
		src.exhausted = &Error{File: src.file, Pos: posOf(n), Msg: fmt.Sprintf("values nest more than %d levels deep through aliases: refused", 4*MaxDepth)}
	}
	return src.exhausted == nil
}

func (d *decoder) errorf(n ast.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.src.file, Pos: posOf(n), Path: path, Msg: fmt.Sprintf(format, args...)})
}

var (
	nodeType            = reflect.TypeFor[Node]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decode walks one AST node into v, collecting errors instead of stopping.
func (d *decoder) decode(n ast.Node, v reflect.Value, path string) {
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(Node{node: n, src: d.src, path: path}))
		return
	}
	n = unwrap(d.src, n)
	if n == nil || isNull(n) {
		return // a null value leaves the default
	}
	if !d.visit(n) {
		return
	}
	d.depth++
	defer func() { d.depth-- }()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	if ref, ok := d.src.varRef(n); ok {
		d.decodeText(n, ref, v, path)
		return
	}
	if reflect.PointerTo(v.Type()).Implements(textUnmarshalerType) {
		text, ok := scalarText(n)
		if !ok {
			d.errorf(n, path, "want %s, got %s", describe(v.Type()), nodeKind(n))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			d.errorf(n, path, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.errorf(n, path, "want a list, got %s", nodeKind(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
		for i, e := range seq.Values {
			epath := fmt.Sprintf("%s[%d]", path, i)
			d.pos[epath] = posOf(unwrap(d.src, e))
			d.decode(e, s.Index(i), epath)
		}
		v.Set(s)
	case reflect.String:
		text, ok := scalarText(n)
		if !ok {
			d.errorf(n, path, "want a string, got %s", nodeKind(n))
			return
		}
		v.SetString(text)
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.errorf(n, path, "want true or false, got %s", nodeKind(n))
			return
		}
		v.SetBool(b.Value)
	case reflect.Int, reflect.Int64, reflect.Int32:
		i, ok := n.(*ast.IntegerNode)
		if !ok {
			d.errorf(n, path, "want a whole number, got %s", nodeKind(n))
			return
		}
		var x int64
		switch iv := i.Value.(type) {
		case int64:
			x = iv
		case uint64:
			if iv > math.MaxInt64 {
				d.errorf(n, path, "number %d is too large", iv)
				return
			}
			x = int64(iv)
		}
		if v.OverflowInt(x) {
			d.errorf(n, path, "number %d is too large", x)
			return
		}
		v.SetInt(x)
	case reflect.Float64:
		switch f := n.(type) {
		case *ast.FloatNode:
			if !finite(f.Value) {
				d.errorf(n, path, "want a finite number, got %s", f.GetToken().Value)
				return
			}
			v.SetFloat(f.Value)
		case *ast.IntegerNode, *ast.StringNode:
			// The parser reads some numbers (1e-300) as strings.
			text, _ := scalarText(n)
			x, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
			if _, isString := n.(*ast.StringNode); (err != nil && !errors.Is(err, strconv.ErrRange)) || (isString && n.GetToken().Type != token.StringType) {
				d.errorf(n, path, "want a number, got %q", text)
				return
			}
			if !finite(x) {
				d.errorf(n, path, "want a finite number, got %q", text)
				return
			}
			v.SetFloat(x)
		case *ast.InfinityNode, *ast.NanNode:
			d.errorf(n, path, "want a finite number, got %s", n.GetToken().Value)
		default:
			d.errorf(n, path, "want a number, got %s", nodeKind(n))
		}
	default:
		panic("scenario: cannot decode into " + v.Type().String())
	}
}

// decodeText decodes the text of a variable into a scalar field, as the
// command line's values are: units included.
func (d *decoder) decodeText(n ast.Node, text string, v reflect.Value, path string) {
	if tu, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := tu.UnmarshalText([]byte(text)); err != nil {
			d.errorf(n, path, "%v (from the variable %s)", err, n.GetToken().Value)
		}
		return
	}
	var err error
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		var b bool
		if b, err = strconv.ParseBool(text); err == nil {
			v.SetBool(b)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		var x int64
		if x, err = strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64); err == nil && !v.OverflowInt(x) {
			v.SetInt(x)
		}
	case reflect.Float64:
		var f float64
		if f, err = strconv.ParseFloat(text, 64); err == nil {
			v.SetFloat(f)
		}
	default:
		err = fmt.Errorf("a variable can only stand for a single value")
	}
	if err != nil {
		d.errorf(n, path, "%q (from the variable %s) does not fit here: %v", text, n.GetToken().Value, err)
	}
}

func structFields(t reflect.Type) (byName map[string]int, names []string, rest int) {
	byName = map[string]int{}
	rest = -1
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == ",rest" {
			rest = i
			continue
		}
		if tag == ",node" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			continue
		}
		byName[name] = i
		names = append(names, name)
	}
	return byName, names, rest
}

// nodeField is the index of a struct's field tagged `yaml:",node"`, which
// receives the struct's whole mapping undecoded (for positions), or -1.
func nodeField(t reflect.Type) int {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == ",node" {
			return i
		}
	}
	return -1
}

func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.errorf(n, path, "want a mapping of keys (%s), got %s", strings.Join(sortedKeys(v.Type()), ", "), nodeKind(n))
		return
	}
	byName, names, restIdx := structFields(v.Type())
	if i := nodeField(v.Type()); i >= 0 {
		v.Field(i).Set(reflect.ValueOf(Node{node: m, src: d.src, path: path}))
	}
	var rest []*ast.MappingValueNode
	seen := map[string]bool{}
	for _, mv := range d.entries(m) {
		key := keyText(mv.Key)
		kpath := joinPath(path, key)
		if seen[key] {
			d.errorf(mv.Key, kpath, "key %q is given twice", key)
			continue
		}
		seen[key] = true
		i, ok := byName[key]
		if !ok {
			if restIdx >= 0 {
				rest = append(rest, mv)
				continue
			}
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest(key, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += "; known keys: " + strings.Join(sortedKeys(v.Type()), ", ")
			}
			d.errorf(mv.Key, kpath, "%s", msg)
			continue
		}
		d.pos[kpath] = posOf(mv.Key)
		d.decode(mv.Value, v.Field(i), kpath)
	}
	if restIdx >= 0 && len(rest) > 0 {
		rm := &ast.MappingNode{BaseNode: &ast.BaseNode{}, Start: m.Start, Values: rest}
		v.Field(restIdx).Set(reflect.ValueOf(Node{node: rm, src: d.src, path: path}))
	}
}

func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path string) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.errorf(n, path, "want a mapping, got %s", nodeKind(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic("scenario: map keys must be strings")
	}
	out := reflect.MakeMap(v.Type())
	for _, mv := range d.entries(m) {
		key := keyText(mv.Key)
		kpath := joinPath(path, key)
		if out.MapIndex(reflect.ValueOf(key)).IsValid() {
			d.errorf(mv.Key, kpath, "key %q is given twice", key)
			continue
		}
		ev := reflect.New(v.Type().Elem()).Elem()
		d.decode(mv.Value, ev, kpath)
		out.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), ev)
	}
	v.Set(out)
}

// entries returns the key/value pairs of a mapping with YAML merge keys
// ("<<: *base") expanded: merged pairs first, so explicit keys override them.
func (d *decoder) entries(m *ast.MappingNode) []*ast.MappingValueNode {
	var merged, own []*ast.MappingValueNode
	for _, mv := range m.Values {
		if mv.Key == nil {
			continue
		}
		if !mv.Key.IsMergeKey() {
			own = append(own, mv)
			continue
		}
		var srcs []ast.Node
		switch t := unwrap(d.src, mv.Value).(type) {
		case *ast.MappingNode:
			srcs = []ast.Node{t}
		case *ast.SequenceNode:
			srcs = t.Values
		default:
			d.errorf(mv.Value, "", "a merge key (<<) needs a mapping or a list of mappings")
		}
		for _, s := range srcs {
			if sm, ok := unwrap(d.src, s).(*ast.MappingNode); ok {
				if d.src.values -= len(sm.Values); !d.visit(sm) {
					return nil
				}
				merged = append(merged, sm.Values...)
			}
		}
	}
	if len(merged) == 0 {
		return own
	}
	ownKeys := map[string]bool{}
	for _, mv := range own {
		ownKeys[keyText(mv.Key)] = true
	}
	var out []*ast.MappingValueNode
	for _, mv := range merged {
		if !ownKeys[keyText(mv.Key)] {
			out = append(out, mv)
			ownKeys[keyText(mv.Key)] = true
		}
	}
	return append(out, own...)
}

// unwrap resolves anchors, aliases, tags and explicit "? key" wrappers down
// to the node that carries the value. Every alias has an anchor (see
// collectAnchors); without a source, an alias resolves to nil.
func unwrap(src *source, n ast.Node) ast.Node {
	for i := 0; n != nil && i < 100; i++ {
		switch t := n.(type) {
		case *ast.AnchorNode:
			n = t.Value
		case *ast.TagNode:
			n = t.Value
		case *ast.MappingKeyNode:
			n = t.Value
		case *ast.AliasNode:
			if src == nil {
				return nil
			}
			n = src.aliases[t]
		case *ast.MappingValueNode:
			// A single "key: value" pair can stand for a one-entry mapping.
			return &ast.MappingNode{BaseNode: &ast.BaseNode{}, Start: t.GetToken(), Values: []*ast.MappingValueNode{t}}
		case *ast.DocumentNode:
			n = t.Body
		default:
			return n
		}
	}
	return n
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok
}

// scalarText returns the text of a scalar node as written (unquoted).
func scalarText(n ast.Node) (string, bool) {
	switch t := n.(type) {
	case *ast.StringNode:
		return t.Value, true
	case *ast.LiteralNode:
		if t.Value == nil {
			return "", true
		}
		return t.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		tk := n.GetToken()
		if tk == nil {
			return "", false
		}
		return tk.Value, true
	}
	return "", false
}

func keyText(k ast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	var n ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		n = mk.Value
	}
	if t, ok := scalarText(n); ok {
		return t
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

func posOf(n ast.Node) Pos {
	if n == nil {
		return Pos{}
	}
	var tk *token.Token
	switch t := n.(type) {
	case *ast.MappingNode:
		if len(t.Values) > 0 && t.Values[0].Key != nil {
			tk = t.Values[0].Key.GetToken()
		} else {
			tk = t.Start
		}
	case *ast.MappingValueNode:
		if t.Key != nil {
			tk = t.Key.GetToken()
		}
	case *ast.SequenceNode:
		tk = t.Start
	default:
		tk = n.GetToken()
	}
	if tk == nil || tk.Position == nil {
		return Pos{}
	}
	return Pos{Line: tk.Position.Line, Col: tk.Position.Column}
}

func nodeKind(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.IntegerNode:
		return "a whole number"
	case *ast.FloatNode:
		return "a number"
	case *ast.NullNode:
		return "nothing"
	}
	if t, ok := scalarText(n); ok {
		return strconv.Quote(t)
	}
	return "something else"
}

func describe(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration (like 90s, 17m or 2h)"
	case reflect.TypeFor[Size]():
		return "a size (like 100B, 75KB or 20KiB)"
	case reflect.TypeFor[Rate]():
		return "a rate (like 35/s or 12/8h)"
	}
	return "a value"
}

func sortedKeys(t reflect.Type) []string {
	_, names, _ := structFields(t)
	names = append([]string(nil), names...)
	sort.Strings(names)
	return names
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// collectAnchors resolves every alias of a document to its value: that of
// the latest anchor of its name before it, as YAML says. An alias with no
// anchor before it, or inside the value of its own anchor (which would
// make the value infinite), is an error.
func (src *source) collectAnchors(doc ast.Node) error {
	c := &anchors{src: src, seen: map[string]*ast.AnchorNode{}}
	src.aliases = map[*ast.AliasNode]ast.Node{}
	ast.Walk(&anchorVisitor{c: c}, doc)
	return c.err
}

type anchors struct {
	src  *source
	seen map[string]*ast.AnchorNode // the latest anchor of each name so far
	err  error
}

// anchorVisitor walks a document in order; open lists the anchors whose
// value holds the node visited.
type anchorVisitor struct {
	c    *anchors
	open *openAnchor
}

type openAnchor struct {
	a    *ast.AnchorNode
	next *openAnchor
}

func (v *anchorVisitor) Visit(n ast.Node) ast.Visitor {
	c := v.c
	if c.err != nil {
		return nil
	}
	switch t := n.(type) {
	case *ast.AnchorNode:
		if t.Name == nil {
			return v
		}
		c.seen[t.Name.GetToken().Value] = t
		return &anchorVisitor{c: c, open: &openAnchor{a: t, next: v.open}}
	case *ast.AliasNode:
		name := ""
		if t.Value != nil {
			name = t.Value.GetToken().Value
		}
		a, ok := c.seen[name]
		if !ok {
			c.err = &Error{File: c.src.file, Pos: posOf(t), Msg: fmt.Sprintf("alias *%s has no anchor &%s before it", name, name)}
			return nil
		}
		for o := v.open; o != nil; o = o.next {
			if o.a == a {
				c.err = &Error{File: c.src.file, Pos: posOf(t), Msg: fmt.Sprintf("alias *%s is inside the value of its own anchor &%s: the value would never end", name, name)}
				return nil
			}
		}
		c.src.aliases[t] = a.Value
		return nil
	}
	return v
}

// syntaxHints add what to do to the parser's most common messages.
var syntaxHints = []struct{ has, hint string }{
	{"mapping value is not allowed in this context", "check the indentation of this line and the next, where the keys of one mapping line up, and quote a value that holds \": \""},
	{"value is not allowed in this context", "check the indentation: items of one list line up"},
	{"already defined", "a key is given once per mapping"},
	{"cannot start any token", "indent with spaces, not tabs"},
	{"end token", "a bracket is not closed"},
	{"could not find end character", "a quote is not closed"},
}

// explainSyntax appends a hint to a parser message it knows.
func explainSyntax(msg string) string {
	msg = strings.ReplaceAll(msg, "\t", `\t`)
	for _, h := range syntaxHints {
		if strings.Contains(msg, h.has) {
			return msg + " (" + h.hint + ")"
		}
	}
	return msg
}

// syntaxError converts a parser error into a positioned Error.
func syntaxError(file string, err error) error {
	type tokenError interface{ GetToken() *token.Token }
	type messageError interface{ GetMessage() string }
	var te tokenError
	if errors.As(err, &te) {
		msg := err.Error()
		var me messageError
		if errors.As(err, &me) {
			msg = me.GetMessage()
		}
		e := &Error{File: file, Msg: "YAML syntax: " + explainSyntax(msg)}
		if tk := te.GetToken(); tk != nil && tk.Position != nil {
			e.Pos = Pos{Line: tk.Position.Line, Col: tk.Position.Column}
		}
		return e
	}
	return &Error{File: file, Msg: "YAML syntax: " + err.Error()}
}
