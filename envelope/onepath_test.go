package envelope

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// onePathViolations returns every call in file (a non-test Go file at path
// relative to the repository root) that reaches the interlock around the
// tool pipeline: a call of ApplyKeyed anywhere (it is for the envelope's
// own test packages), a call of apply in package envelope outside
// invoke.go (the Invoker) and ApplyKeyed's own body, and any mention of
// envelope.Interlock in session/ (an executor or the engine holding the
// interlock could bypass the pipeline).
func onePathViolations(fset *token.FileSet, path string, file *ast.File) []string {
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	inEnvelope := filepath.ToSlash(filepath.Dir(path)) == "envelope"
	inSession := strings.HasPrefix(filepath.ToSlash(path), "session/")
	for _, d := range file.Decls {
		fn, _ := d.(*ast.FuncDecl)
		allowed := inEnvelope && (filepath.Base(path) == "invoke.go" ||
			filepath.Base(path) == "interlock.go" && fn != nil && fn.Name.Name == "ApplyKeyed")
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch {
				case sel.Sel.Name == "ApplyKeyed" && !allowed:
					report(n, "ApplyKeyed called outside the envelope's test packages")
				case sel.Sel.Name == "apply" && inEnvelope && !allowed:
					report(n, "the interlock's apply called outside the Invoker (invoke.go)")
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && inSession && id.Name == "envelope" && n.Sel.Name == "Interlock" {
					report(n, "session/ holds an envelope.Interlock: actions must go through envelope.Invoker")
				}
			}
			return true
		})
	}
	return out
}

// TestOnePathToActuators: no production code calls the interlock around
// the tool pipeline. The interlock's apply is unexported (so only package
// envelope can call it) and only the Invoker does; ApplyKeyed, whose key
// type is internal to envelope/, is called by no non-test file; session/
// never names envelope.Interlock. Every non-test Go file of the repository
// is parsed.
func TestOnePathToActuators(t *testing.T) {
	if m, ok := reflect.TypeFor[*Interlock]().MethodByName("Apply"); ok {
		t.Fatalf("*Interlock exports %s: every action must go through the Invoker", m.Name)
	}
	root := ".."
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files++
		for _, v := range onePathViolations(fset, rel, f) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files read under %s: is the walk rooted at the repository?", files, root)
	}
}

// TestOnePathCheckCatches: the scan of TestOnePathToActuators reports each
// kind of bypass in a file made up for the purpose.
func TestOnePathCheckCatches(t *testing.T) {
	tests := []struct {
		name, path, src string
		want            int
	}{
		{"keyed call in cmd", "cmd/hcp-edge/x.go", `package main
func f() { il.ApplyKeyed(k, ctx, "t", a) }`, 1},
		{"apply in envelope outside the Invoker", "envelope/monitor2.go", `package envelope
func (m *Monitor) f() { m.il.apply(ctx, "t", a) }`, 1},
		{"interlock in an executor", "session/executor/x.go", `package executor
type r struct{ il *envelope.Interlock }`, 1},
		{"the Invoker", "envelope/invoke.go", `package envelope
func (iv *Invoker) f() { iv.il.apply(ctx, "t", a) }`, 0},
		{"an executor's own apply", "session/executor/run2.go", `package executor
func (p *proc) f() { p.apply(ctx, a) }`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.path, tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := onePathViolations(fset, tt.path, f); len(got) != tt.want {
				t.Fatalf("got %q, want %d", got, tt.want)
			}
		})
	}
}
