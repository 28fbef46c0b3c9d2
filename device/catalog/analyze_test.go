package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestAnalyzeTool: raman.analyze is the built-in compute tool, at
// rig.measure, never dangerous; its input schema is strict.
func TestAnalyzeTool(t *testing.T) {
	r, err := Builtin(simLines)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := r.Describe(ToolAnalyze, BuiltinVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !tl.Compute() || tl.Safety.Dangerous || tl.Safety.Permission != PermissionMeasure || len(tl.Safety.SideEffects) != 0 {
		t.Fatalf("raman.analyze: %+v", tl)
	}
	for _, other := range r.List() {
		if other.Name != ToolAnalyze && other.Compute() {
			t.Errorf("%s: only raman.analyze is a compute tool", other.Ref())
		}
	}
	const sp = `"spectrum": {"shift": [380, 400, 410], "counts": [1, 2, 3], "integration_ms": 1000}`
	tests := []struct {
		name, input string
		ok          bool
	}{
		{"spectrum alone", `{` + sp + `}`, true},
		{"everything", `{"task": "s-1", ` + sp + `, "material": "MoS2", "confidence_threshold": 0.8, "data_class": "T3",
			"model_hint": "best", "policy": "balance", "time_budget_ms": 30000, "cost_budget": 0.05}`, true},
		{"no spectrum", `{"material": "MoS2"}`, false},
		{"threshold above 1", `{` + sp + `, "confidence_threshold": 1.5}`, false},
		{"data class T5", `{` + sp + `, "data_class": "T5"}`, false},
		{"unknown hint", `{` + sp + `, "model_hint": "cheap"}`, false},
		{"negative cost", `{` + sp + `, "cost_budget": -1}`, false},
		{"extra field", `{` + sp + `, "laser": true}`, false},
		{"extra spectrum field", `{"spectrum": {"shift": [1], "counts": [1], "integration_ms": 1, "gain": 2}}`, false},
		{"empty shift", `{"spectrum": {"shift": [], "counts": [1], "integration_ms": 1}}`, false},
	}
	for _, tc := range tests {
		err := tl.ValidateInputJSON([]byte(tc.input))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v is not ErrInvalidInput", tc.name, err)
		}
	}
	out := `{"routed": false, "model": "local-fit", "tier": 1, "layer_count": 1, "confidence": 0.9, "fallback": false, "cost": 0,
		"fit": {"found": true, "layer_count": 1, "confidence": 0.9, "e2g": {"position_cm1": 385}}}`
	if err := tl.ValidateOutput(decode(t, out)); err != nil {
		t.Fatal(err)
	}
	if err := tl.ValidateOutput(decode(t, `{"routed": false, "model": "local-fit", "tier": 9, "layer_count": 1, "confidence": 0.9,
		"fallback": false, "cost": 0, "fit": {"found": true, "layer_count": 1, "confidence": 0.9}}`)); !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("tier 9: %v", err)
	}
}

// TestComputeNeverDangerous: a compute tool reaches no instrument, so
// Register refuses one marked dangerous.
func TestComputeNeverDangerous(t *testing.T) {
	tl := validTool()
	tl.Category, tl.Safety.Dangerous = CategoryCompute, true
	if err := NewRegistry().Register(tl); !errors.Is(err, ErrInvalidTool) {
		t.Fatalf("dangerous compute tool: %v", err)
	}
	tl.Safety.Dangerous = false
	if err := NewRegistry().Register(tl); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAnalyzeMaterialsFromData: raman.analyze's material enums are the
// materials the wiring hands down (the analysis's models), not names in
// this package; without them a material is any short name.
func TestAnalyzeMaterialsFromData(t *testing.T) {
	const sp = `"spectrum": {"shift": [1], "counts": [1], "integration_ms": 1}`
	r, err := Builtin(simLines, "MoS2", "WS2", "graphene")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := r.Describe(ToolAnalyze, BuiltinVersion)
	if err != nil {
		t.Fatal(err)
	}
	for m, ok := range map[string]bool{"MoS2": true, "graphene": true, "auto": true, "hBN": false, "mixture": false} {
		if err := tl.ValidateInputJSON([]byte(`{` + sp + `, "material": "` + m + `"}`)); (err == nil) != ok {
			t.Errorf("input material %s: %v, want ok %v", m, err, ok)
		}
	}
	base := `{"routed": false, "model": "local-fit", "tier": 1, "layer_count": 2, "confidence": 0.9, "fallback": false, "cost": 0, `
	for name, c := range map[string]struct {
		out string
		ok  bool
	}{
		"graphene reading": {base + `"material": "graphene", "identified": {"name": "graphene", "confidence": 0.9},
			"fit": {"found": true, "material": "graphene", "layer_count": 2, "confidence": 0.9, "graphene": {"layers": "2"}}}`, true},
		"unknown material": {base + `"material": "hBN", "fit": {"found": true, "layer_count": 2, "confidence": 0.9}}`, false},
		"unknown reading":  {base + `"fit": {"found": true, "layer_count": 2, "confidence": 0.9, "hBN": {}}}`, false},
		"identified none":  {base + `"identified": {"name": "none", "confidence": 0.9}, "fit": {"found": true, "layer_count": 2, "confidence": 0.9}}`, true},
	} {
		if err := tl.ValidateOutput(decode(t, c.out)); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", name, err, c.ok)
		}
	}
	// No materials handed down: any short name (the analysis refuses an
	// unknown one), never an empty one.
	r0, _ := Builtin(simLines)
	t0, _ := r0.Describe(ToolAnalyze, BuiltinVersion)
	if err := t0.ValidateInputJSON([]byte(`{` + sp + `, "material": "MoS2"}`)); err != nil {
		t.Fatal(err)
	}
	if err := t0.ValidateInputJSON([]byte(`{` + sp + `, "material": ""}`)); err == nil {
		t.Fatal("empty material accepted")
	}
	if strings.Contains(string(t0.InputSchema), "enum\": [\"MoS2") {
		t.Fatal("a material named in the catalog")
	}
}
