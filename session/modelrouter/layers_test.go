package modelrouter_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestReachesNoActuator: of the module's packages, the router's non-test
// code reaches only the device contracts (the Spectrum type) and the local
// analyses: no interlock, no driver, no tool catalog, no transport, no
// session machinery. Models advise; nothing they answer can move the rig.
// internal/http1 (the HTTP client's request writer) is allowed as a package
// of the standard library's would be; the walk checks its own imports too.
func TestReachesNoActuator(t *testing.T) {
	const mod = "hcp-edge/"
	allowed := []string{mod + "device", mod + "session/analysis", mod + "session/analysis/robust", mod + "session/modelrouter",
		mod + "internal/http1"}
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] || !strings.HasPrefix(path, mod) {
			return
		}
		seen[path] = true
		if !slices.Contains(allowed, path) {
			t.Errorf("%s reaches %s (through %s)", mod+"session/modelrouter", path, from)
			return
		}
		p, err := build.Default.Import(path, ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			walk(imp, path)
		}
	}
	walk(mod+"session/modelrouter", "")
	if !seen[mod+"session/analysis/robust"] {
		t.Fatalf("the walk did not read the router's imports: %v", seen)
	}
}
