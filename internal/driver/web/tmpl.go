package web

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/secret"
)

// Built-in template variables, beside the user's own (extracted values,
// data feed columns, the block's vars).
const (
	varUser      = "user"      // the user's number, 1..users, the same in every segment
	varUsers     = "users"     // users in the whole plan
	varIteration = "iteration" // the user's iteration (journey) in progress, from 1
	varUnique    = "unique"    // an id no other request of the plan gets: u<user>-<n>
	varRand      = "rand"      // the user's seeded random stream (see userRand)
)

var builtinVars = []string{varUser, varUsers, varIteration, varUnique, varRand}

// randMethods are the methods of userRand a template may call.
var randMethods = []string{"Int", "Pick", "Hex", "UUID"}

// text is a value of a request (path, header value, body, condition) that
// may be a template: {{ .token }}, {{ .user }}, {{ .rand.Int 1 100 }}. A
// value without "{{" is used as is. Secrets (${NAME}) are expanded in the
// literal parts only, once, when the template is compiled: a secret's value
// is never read as a template.
type text struct {
	lit  string             // the value when it is no template
	tmpl *template.Template // nil when it is none
	uses []string           // the variables it reads, sorted
}

// isTemplate reports whether the value must be rendered per request.
func (t *text) isTemplate() bool { return t.tmpl != nil }

// render returns the value for one request of a user whose variables are
// vars (built-ins included).
func (t *text) render(vars map[string]any, b *strings.Builder) (string, error) {
	if t.tmpl == nil {
		return t.lit, nil
	}
	b.Reset()
	if err := t.tmpl.Execute(b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}

// compileText parses value, found in the scenario at node n (a scalar),
// as a template. known says whether a variable is defined at this place
// (built-ins, feeds, vars, the values earlier steps extract); a variable it
// is not is an error positioned at its column. where names the value in
// messages ("path").
func compileText(value string, n scenario.Node, where string, known func(string) bool) (*text, []error) {
	if !strings.Contains(value, "{{") {
		v, err := secret.Expand(value)
		if err != nil {
			return nil, []error{n.ErrorAt(0, "%s: %v", where, err)}
		}
		return &text{lit: v}, nil
	}
	t, err := template.New(where).Option("missingkey=error").Parse(value)
	if err != nil {
		return nil, []error{n.ErrorAt(templateErrorOffset(value, err), "%s: %s", where, templateMessage(err))}
	}
	var errs []error
	uses := map[string]bool{}
	walk(t.Tree.Root, func(node parse.Node) {
		switch x := node.(type) {
		case *parse.TextNode:
			v, err := secret.Expand(string(x.Text))
			if err != nil {
				errs = append(errs, n.ErrorAt(int(x.Pos), "%s: %v", where, err))
				return
			}
			x.Text = []byte(v)
		case *parse.FieldNode:
			name := x.Ident[0]
			uses[name] = true
			switch {
			case !known(name):
				errs = append(errs, n.ErrorAt(int(x.Pos), "%s: {{ .%s }} is not defined here: %s", where, name, definedHint(known)))
			case name == varRand && (len(x.Ident) < 2 || !contains(randMethods, x.Ident[1])):
				errs = append(errs, n.ErrorAt(int(x.Pos), "%s: .rand takes a method: %s (like {{ .rand.Int 1 100 }})", where, strings.Join(randMethods, ", ")))
			case name != varRand && len(x.Ident) > 1:
				errs = append(errs, n.ErrorAt(int(x.Pos), "%s: .%s is a value, it has no .%s", where, name, x.Ident[1]))
			}
		case *parse.VariableNode:
			if len(x.Ident) > 1 && x.Ident[0] == "$" {
				name := x.Ident[1]
				uses[name] = true
				if !known(name) {
					errs = append(errs, n.ErrorAt(int(x.Pos), "%s: {{ $.%s }} is not defined here: %s", where, name, definedHint(known)))
				}
			}
		}
	})
	if len(errs) > 0 {
		return nil, errs
	}
	out := &text{tmpl: t}
	for k := range uses {
		out.uses = append(out.uses, k)
	}
	sort.Strings(out.uses)
	return out, nil
}

// definedHint says how a variable gets defined, for a message about one
// that is not.
func definedHint(func(string) bool) string {
	return "define it by an extractor of an earlier step, a data feed column or the web block's vars (built in: .user, .users, .iteration, .unique, .rand)"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// walk calls f on every node of a template's tree.
func walk(n parse.Node, f func(parse.Node)) {
	if n == nil {
		return
	}
	f(n)
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return
		}
		for _, c := range x.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		walk(x.Pipe, f)
	case *parse.PipeNode:
		if x == nil {
			return
		}
		for _, c := range x.Cmds {
			walk(c, f)
		}
	case *parse.CommandNode:
		for _, c := range x.Args {
			walk(c, f)
		}
	case *parse.ChainNode:
		walk(x.Node, f)
	case *parse.IfNode:
		walk(x.Pipe, f)
		walk(x.List, f)
		walk(x.ElseList, f)
	case *parse.RangeNode:
		walk(x.Pipe, f)
		walk(x.List, f)
		walk(x.ElseList, f)
	case *parse.WithNode:
		walk(x.Pipe, f)
		walk(x.List, f)
		walk(x.ElseList, f)
	}
}

// templateErrorOffset finds the byte offset a parse error points at: its
// message says "template: NAME:LINE: ..." and sometimes names the text.
func templateErrorOffset(value string, err error) int {
	msg := err.Error()
	// "template: path:1: function "foo" not defined"
	if i := strings.Index(msg, "function \""); i >= 0 {
		name := msg[i+len("function \""):]
		if j := strings.IndexByte(name, '"'); j > 0 {
			if k := strings.Index(value, name[:j]); k >= 0 {
				return k
			}
		}
	}
	if k := strings.Index(value, "{{"); k >= 0 {
		return k
	}
	return 0
}

// templateMessage is a parse error without its "template: NAME:LINE: " head.
func templateMessage(err error) string {
	return templateHead.ReplaceAllString(err.Error(), "")
}

// templateHead is the "template: NAME:LINE:COL: " before text/template's
// messages (the position is said as the scenario's file:line:col).
var templateHead = regexp.MustCompile(`^template: [^:]*:[0-9]+(:[0-9]+)?: (executing "[^"]*" at <[^>]*>: )?`)

// truth reports whether a rendered condition holds: anything but "",
// "false", "0" and "<no value>" (spaces around it aside).
func truth(s string) bool {
	switch strings.TrimSpace(s) {
	case "", "false", "0", "<no value>":
		return false
	}
	return true
}

// userRand is the .rand of a user's templates: its own stream, seeded
// from the user's seed, so a run is repeatable.
type userRand struct{ r *rand.Rand }

func newUserRand(seed uint64) *userRand {
	return &userRand{rand.New(rand.NewPCG(seed, seed^0x5eed_7e4b_1a7e_0001))}
}

// Int returns a whole number from lo to hi, both included.
func (u *userRand) Int(lo, hi int) (int, error) {
	if hi < lo {
		return 0, fmt.Errorf(".rand.Int %d %d: the second bound is below the first", lo, hi)
	}
	return lo + u.r.IntN(hi-lo+1), nil
}

// Pick returns one of its arguments.
func (u *userRand) Pick(choices ...string) (string, error) {
	if len(choices) == 0 {
		return "", fmt.Errorf(".rand.Pick needs at least one choice")
	}
	return choices[u.r.IntN(len(choices))], nil
}

// Hex returns n random hexadecimal digits (at most 256).
func (u *userRand) Hex(n int) (string, error) {
	if n < 0 || n > 256 {
		return "", fmt.Errorf(".rand.Hex %d: between 0 and 256 digits", n)
	}
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[u.r.IntN(16)]
	}
	return string(b), nil
}

// UUID returns a random (version 4) UUID from the user's stream.
func (u *userRand) UUID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		x := u.r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[x>>4], hex[x&15])
	}
	return string(out)
}

// uniqueID is the .unique of a user's n-th request: no other request of
// the plan, in any segment, gets the same (user numbers are global).
func uniqueID(user, n int) string {
	return "u" + strconv.Itoa(user) + "-" + strconv.Itoa(n)
}
