package scenario

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Get returns the value of key in a block that is a mapping, as a Node of
// its own (its path extended by key), and whether the key is there.
func (n Node) Get(key string) (Node, bool) {
	m, ok := unwrap(n.src, n.node).(*ast.MappingNode)
	if !ok {
		return Node{}, false
	}
	for _, mv := range m.Values {
		if keyText(mv.Key) == key {
			return Node{node: mv.Value, src: n.src, path: joinPath(n.path, key)}, true
		}
	}
	return Node{}, false
}

// Dir is the directory of the file the block comes from, against which a
// relative path given in the block is read; "" for a preset or a file
// without a name.
func (n Node) Dir() string {
	if n.src == nil || n.src.file == "" || strings.HasPrefix(n.src.file, "preset ") || strings.HasPrefix(n.src.file, "presets/") {
		return ""
	}
	return filepath.Dir(n.src.file)
}

// ErrorAt returns an error positioned inside the block's value, a scalar:
// at byte offset of its text (as decoded), so a problem in the middle of a
// value (an undefined template variable, a bad regular expression) is
// pointed at by its own column. For a quoted scalar the offset counts
// from after the opening quote; escapes are not accounted for. For a block
// scalar (| or >) the line is that of the offset and the column its place
// on that line.
func (n Node) ErrorAt(offset int, format string, args ...any) error {
	pos := n.Pos()
	v := unwrap(n.src, n.node)
	if text, ok := scalarText(v); ok && offset >= 0 && offset <= len(text) {
		pos = n.src.posIn(v, text, offset)
	}
	file := ""
	if n.src != nil {
		file = n.src.file
	}
	return &Error{File: file, Pos: pos, Path: n.path, Msg: fmt.Sprintf(format, args...)}
}

// posIn is the position of byte offset in text, the value of scalar v.
func (src *source) posIn(v ast.Node, text string, offset int) Pos {
	pos := posOf(v)
	tk := v.GetToken()
	if tk == nil || pos.Line == 0 {
		return pos
	}
	before := text[:offset]
	if _, literal := v.(*ast.LiteralNode); literal {
		// The text starts on the line after the indicator, indented.
		line := strings.Count(before, "\n")
		col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])
		indent := 0
		if src != nil {
			indent = src.indentOf(pos.Line + 1 + line)
		}
		return Pos{Line: pos.Line + 1 + line, Col: indent + col + 1}
	}
	if strings.Contains(before, "\n") {
		return pos // a folded plain or quoted scalar: the start is as close as we get
	}
	col := pos.Col + utf8.RuneCountInString(before)
	if tk.Type == token.DoubleQuoteType || tk.Type == token.SingleQuoteType {
		col++
	}
	return Pos{Line: pos.Line, Col: col}
}

// indentOf returns the number of leading spaces of a line (1-based) of the
// file's text, 0 when it is not known.
func (src *source) indentOf(line int) int {
	if line < 1 {
		return 0
	}
	lines := strings.SplitN(string(src.text), "\n", line+1)
	if len(lines) < line {
		return 0
	}
	l := lines[line-1]
	return len(l) - len(strings.TrimLeft(l, " "))
}
