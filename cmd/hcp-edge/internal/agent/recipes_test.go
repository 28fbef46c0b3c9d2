package agent

import (
	"path/filepath"
	"slices"
	"testing"

	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
)

// TestExecutorsMissing: a declaration with neither a built-in executor nor
// a recipe that passed (the JSON cvd-material-synthesis when the MoS2
// recipe was refused) is reported apart, not a failure of the start; the
// built-in ones get theirs.
func TestExecutorsMissing(t *testing.T) {
	reg, err := capability.LoadDir(filepath.Join("..", "..", "..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	xs, missing, err := executors(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range xs {
		names = append(names, x.Capability())
	}
	if !slices.Equal(missing, []string{executor.CVDName}) || !slices.Contains(names, executor.RigStatusName) || !slices.Contains(names, executor.LeakCheckName) {
		t.Fatalf("executors %v, missing %v", names, missing)
	}
}
