package pubsub

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The protocols differ behind one seam (protocol.go): only mqtt.go speaks
// mqttwire and only nats.go natswire, and no other file of the package
// branches on the protocol's name. A second place that does would be the
// scattered `proto ==` branches this layout replaced.
func TestProtocolSeam(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	wireOf := map[string]string{
		"github.com/throng-io/throng/internal/driver/pubsub/mqttwire": "mqtt.go",
		"github.com/throng-io/throng/internal/driver/pubsub/natswire": "nats.go",
	}
	// Where a protocol's name may be compared: the one switch
	// (protocolOf) and the resolution of the block's and the target's
	// names into it.
	namedIn := map[string]bool{"protocol.go": true, "config.go": true, "target.go": true}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if want, ok := wireOf[path]; ok && want != name {
				t.Errorf("%s imports %s: only %s may (the protocol's code lives behind protocol.go)", name, path, want)
			}
		}
		if namedIn[name] {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if x.Op == token.EQL || x.Op == token.NEQ {
					for _, side := range []ast.Expr{x.X, x.Y} {
						if protocolName(side) {
							t.Errorf("%s: a comparison with a protocol's name: put the difference behind protocol (protocol.go)", fset.Position(x.Pos()))
						}
					}
				}
			case *ast.CaseClause:
				for _, e := range x.List {
					if protocolName(e) {
						t.Errorf("%s: a case on a protocol's name: put the difference behind protocol (protocol.go)", fset.Position(e.Pos()))
					}
				}
			case *ast.SelectorExpr:
				if x.Sel.Name == "proto" {
					t.Errorf("%s: reads the protocol's name (.proto): use c.protocol()", fset.Position(x.Pos()))
				}
			}
			return true
		})
	}
}

// protocolName reports whether e is one of the names NATS, MQTT, MQTT5.
func protocolName(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "NATS" || id.Name == "MQTT" || id.Name == "MQTT5")
}
