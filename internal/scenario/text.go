package scenario

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Bounds on what a scenario file may ask of the YAML parser and the
// decoder, so that no file, however written, takes more than a fraction of
// a second and a few tens of megabytes to be read or refused.
const (
	// MaxDepth bounds how deeply values nest (mappings in lists in
	// mappings...). A scenario nests 5 levels or so; the parser's memory
	// grows with the square of the depth.
	MaxDepth = 64
	// MaxTokens bounds the YAML tokens (keys, values, brackets, dashes)
	// of a file.
	MaxTokens = 50_000
	// MaxValues bounds the values the decoder visits, aliases expanded
	// (a "billion laughs" file is a few lines whose aliases expand to
	// billions of values).
	MaxValues = 40_000
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// checkText accepts UTF-8 text, with or without a byte-order mark (which it
// drops), and refuses anything else with one message: UTF-16 and UTF-32
// text, NUL bytes, bytes that are not UTF-8.
func checkText(file string, src []byte) ([]byte, error) {
	src = bytes.TrimPrefix(src, utf8BOM)
	switch {
	case bytes.HasPrefix(src, []byte{0x00, 0x00, 0xFE, 0xFF}), bytes.HasPrefix(src, []byte{0xFF, 0xFE, 0x00, 0x00}):
		return nil, &Error{File: file, Msg: "the file is UTF-32 text: save it as UTF-8"}
	case bytes.HasPrefix(src, []byte{0xFE, 0xFF}), bytes.HasPrefix(src, []byte{0xFF, 0xFE}), utf16Like(src):
		return nil, &Error{File: file, Msg: "the file is UTF-16 text: save it as UTF-8"}
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return nil, &Error{File: file, Pos: posAt(src, i), Msg: "a NUL byte: this is not a text file"}
	}
	if !utf8.Valid(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, &Error{File: file, Pos: posAt(src, i), Msg: fmt.Sprintf("byte 0x%02X is not UTF-8 text: save the file as UTF-8", src[i])}
	}
	return src, nil
}

// utf16Like reports text without a byte-order mark whose first characters
// are ASCII in UTF-16: every other byte is NUL.
func utf16Like(src []byte) bool {
	if len(src) < 4 {
		return false
	}
	return (src[0] == 0 && src[1] != 0 && src[2] == 0 && src[3] != 0) ||
		(src[0] != 0 && src[1] == 0 && src[2] != 0 && src[3] == 0)
}

// posAt is the line and column (in characters) of byte offset i.
func posAt(src []byte, i int) Pos {
	line := 1 + bytes.Count(src[:i], []byte{'\n'})
	start := bytes.LastIndexByte(src[:i], '\n') + 1
	return Pos{Line: line, Col: 1 + utf8.RuneCount(src[start:i])}
}

// parseYAML checks the text and its shape (tokens, depth) and parses it.
func parseYAML(file string, src []byte) (*ast.File, error) {
	src, err := checkText(file, src)
	if err != nil {
		return nil, err
	}
	tokens := lexer.Tokenize(string(src))
	if err := checkShape(file, tokens); err != nil {
		return nil, err
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, syntaxError(file, err)
	}
	return f, nil
}

// checkShape bounds the number of tokens and how deeply values nest. The
// depth is that of the flow brackets plus that of the block indentation:
// each dash or key further right than the enclosing one is one level.
func checkShape(file string, tokens token.Tokens) error {
	var block []int // columns of the enclosing block dashes and keys
	flow := 0
	for i, tk := range tokens {
		if i == MaxTokens {
			return &Error{File: file, Pos: tokenPos(tk), Msg: fmt.Sprintf("more than %d YAML tokens (keys, values, brackets): too large for a scenario file", MaxTokens)}
		}
		col := -1
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(0, flow-1)
		case token.SequenceEntryType, token.MappingKeyType:
			col = tk.Position.Column
		case token.MappingValueType:
			col = tk.Position.Column
			if i > 0 && tokens[i-1].Position.Line == tk.Position.Line {
				col = tokens[i-1].Position.Column // the key's
			}
		}
		if col >= 0 && flow == 0 {
			for len(block) > 0 && block[len(block)-1] >= col {
				block = block[:len(block)-1]
			}
			block = append(block, col)
		}
		if len(block)+flow > MaxDepth {
			return &Error{File: file, Pos: tokenPos(tk), Msg: fmt.Sprintf("values nest more than %d levels deep: too deep for a scenario file", MaxDepth)}
		}
	}
	return nil
}

func tokenPos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{}
	}
	return Pos{Line: tk.Position.Line, Col: tk.Position.Column}
}
