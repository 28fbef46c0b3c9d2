package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// askMoS2 asks the shipped MoS2 recipe's questions; mos2File is the recipe.
const (
	askMoS2  = `{"target_material":"MoS2","substrate":"SiO2/Si","technician_checks":"ask"}`
	mos2File = "../../../../configs/recipes/mos2-sulfurization.yaml"
	// mos2Solid is the two-zone rig's recipe, twoZone its configuration.
	mos2Solid = "../../../../configs/recipes/mos2-solid.yaml"
	twoZone   = "../../../../configs/mos2-two-zone.yaml"
)

// TestRecipeSimulate: the verb previews a built-in capability (JSON and
// text), refuses bad inputs with exit 2, and says what a recipe file needs.
func TestRecipeSimulate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"json", []string{"simulate", "--json", "rig-status"}, ExitOK, `"completed": true`},
		{"text", []string{"simulate", "leak-check"}, ExitOK, "leak-check: completes"},
		{"bad input", []string{"simulate", "--inputs", `{"target_material":"WS2","substrate":"SiO2/Si"}`, "cvd-material-synthesis"}, ExitUsage, "invalid input"},
		{"unknown", []string{"simulate", "no-such-capability"}, ExitUsage, "unknown capability"},
		{"recipe file", []string{"simulate", "--inputs", "@../../../../configs/examples/mos2-task.json", "../../../../configs/recipes/mos2-sulfurization.yaml"}, ExitOK, "completes"},
		{"recipe file, bad input", []string{"simulate", "../../../../configs/recipes/mos2-sulfurization.yaml"}, ExitUsage, "target_material"},
		{"question unanswered", []string{"simulate", "--inputs", askMoS2, mos2File}, ExitFailure, "give --answer precursor_loaded=VALUE"},
		{"question answered", []string{"simulate", "--inputs", askMoS2, "--answer", "precursor_loaded=MoO3", "--answer", "substrate_loaded=yes", mos2File}, ExitOK, "completes"},
		{"wrong precursor", []string{"simulate", "--inputs", askMoS2, "--answer", "precursor_loaded=WO3", "--answer", "substrate_loaded=yes", mos2File}, ExitFailure, "the recipe goes on only with MoO3"},
		{"answer out of its choices", []string{"simulate", "--inputs", askMoS2, "--answer", "precursor_loaded=ZrO2", mos2File}, ExitFailure, "want one of MoO3, WO3, none"},
		{"two zones", []string{"simulate", "--config", twoZone, "--inputs", "@../../../../configs/examples/mos2-solid-task.json", mos2Solid}, ExitOK, "zone sulfur   peak "},
		{"a zone the rig lacks", []string{"simulate", mos2Solid}, ExitUsage, "mos2-solid.yaml:92: phases[4].ramp.zone: this rig has no zone growth (zones: furnace)"},
		{"answer without a name", []string{"simulate", "--answer", "=MoO3", mos2File}, ExitUsage, "want NAME=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Recipe(tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Fatalf("exit %d, want %d; output %q, stderr %q; want %q", code, tc.code, out.String(), errOut.String(), tc.want)
			}
			if tc.name == "json" && !json.Valid(out.Bytes()) {
				t.Fatalf("not JSON: %s", out.String())
			}
		})
	}
}
