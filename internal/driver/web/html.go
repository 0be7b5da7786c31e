package web

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// selector is the small subset of CSS selectors an html extractor takes,
// enough to find a form field or a link: compound selectors of a tag name,
// #id, .class and [attr] or [attr=value] (value quoted or not), separated
// by spaces (descendant). "form#login input[name=csrf]", "a.next",
// "meta[name=csrf-token]". The first element in document order wins.
type selector struct {
	parts []compound // outermost first
}

type compound struct {
	tag     string
	id      string
	classes []string
	attrs   []attrTest
}

type attrTest struct {
	name, value string
	has         bool // [name]: present, any value
}

// parseSelector reads the subset; anything else is an error saying what
// it takes.
func parseSelector(s string) (*selector, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	sel := &selector{}
	for _, f := range fields {
		c, err := parseCompound(f)
		if err != nil {
			return nil, fmt.Errorf("selector %q: %v (the subset: tag, #id, .class, [attr], [attr=value], separated by spaces)", s, err)
		}
		sel.parts = append(sel.parts, c)
	}
	return sel, nil
}

func parseCompound(s string) (compound, error) {
	var c compound
	i := 0
	name := func() string {
		j := i
		for j < len(s) && (isNameByte(s[j])) {
			j++
		}
		n := s[i:j]
		i = j
		return n
	}
	if i < len(s) && isNameByte(s[i]) {
		c.tag = strings.ToLower(name())
	} else if i < len(s) && s[i] == '*' {
		i++
	}
	for i < len(s) {
		switch s[i] {
		case '#':
			i++
			if c.id = name(); c.id == "" {
				return c, fmt.Errorf("# needs an id")
			}
		case '.':
			i++
			cl := name()
			if cl == "" {
				return c, fmt.Errorf(". needs a class")
			}
			c.classes = append(c.classes, cl)
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return c, fmt.Errorf("[ is not closed")
			}
			body := s[i+1 : i+end]
			i += end + 1
			k, v, eq := strings.Cut(body, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			if k == "" || strings.ContainsAny(k, "~|^$*") {
				return c, fmt.Errorf("[%s]: want [attr] or [attr=value]", body)
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			c.attrs = append(c.attrs, attrTest{name: k, value: v, has: !eq})
		default:
			return c, fmt.Errorf("%q is not in the subset", s[i:])
		}
	}
	return c, nil
}

func isNameByte(b byte) bool {
	return b == '-' || b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

func (c *compound) match(n *html.Node) bool {
	if n.Type != html.ElementNode || (c.tag != "" && n.Data != c.tag) {
		return false
	}
	if c.id != "" && attr(n, "id") != c.id {
		return false
	}
	for _, cl := range c.classes {
		if !contains(strings.Fields(attr(n, "class")), cl) {
			return false
		}
	}
	for _, a := range c.attrs {
		v, ok := attrOK(n, a.name)
		if !ok || (!a.has && v != a.value) {
			return false
		}
	}
	return true
}

func attr(n *html.Node, name string) string {
	v, _ := attrOK(n, name)
	return v
}

func attrOK(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

// matches reports whether n matches the whole selector: its last part,
// and the others on its ancestors, in order.
func (s *selector) matches(n *html.Node) bool {
	last := len(s.parts) - 1
	if !s.parts[last].match(n) {
		return false
	}
	k := last - 1
	for p := n.Parent; p != nil && k >= 0; p = p.Parent {
		if s.parts[k].match(p) {
			k--
		}
	}
	return k < 0
}

// htmlDoc is a response body parsed as HTML, once.
type htmlDoc struct {
	root *html.Node
	err  error
}

func (r *response) htmlDoc() *htmlDoc {
	if r.html == nil {
		root, err := html.Parse(bytes.NewReader(r.body))
		r.html = &htmlDoc{root: root, err: err}
	}
	return r.html
}

// find returns the attribute attr (or the default: value of an input,
// select or textarea, href of a link, else the text) of the first element
// matching sel.
func (d *htmlDoc) find(sel *selector, attrName string) (string, bool, error) {
	if d.err != nil {
		return "", false, d.err
	}
	var found *html.Node
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && sel.matches(n) {
			found = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	visit(d.root)
	if found == nil {
		return "", false, nil
	}
	if attrName == "" {
		switch found.Data {
		case "input", "option", "button", "param", "meta":
			if found.Data == "meta" {
				attrName = "content"
			} else {
				attrName = "value"
			}
		case "a", "link", "area", "base":
			attrName = "href"
		case "form":
			attrName = "action"
		case "img", "script", "iframe":
			attrName = "src"
		}
	}
	if attrName == "" || attrName == "text" {
		var b strings.Builder
		var text func(*html.Node)
		text = func(n *html.Node) {
			if n.Type == html.TextNode {
				b.WriteString(n.Data)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				text(c)
			}
		}
		text(found)
		return strings.TrimSpace(b.String()), true, nil
	}
	v, ok := attrOK(found, attrName)
	return v, ok, nil
}
