package preview

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoHardwarePath: a preview must never touch hardware. No file of the
// package (tests aside) imports a driver, the rig-sim server or a transport,
// nor calls rigconfig.Build or BuildPartial (which open the configured
// instruments): the simulated instruments are the only ones it can build.
func TestNoHardwarePath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, bad := range []string{"/drivers/", "/firmware-sim/rig", "/transport/", "periph.io/", "go.bug.st/serial"} {
				if strings.Contains(path+"/", bad) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "rigconfig" && strings.HasPrefix(sel.Sel.Name, "Build") {
					t.Errorf("%s: rigconfig.%s opens the configured instruments", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
