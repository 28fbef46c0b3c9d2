package capability

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestCheckExpectedOutput(t *testing.T) {
	r := loadConfigs(t)
	synth, err := r.Resolve("cvd-material-synthesis", "")
	if err != nil {
		t.Fatal(err)
	}
	// The seed's expected_output (L4's TaskSubmit example).
	seed := `{"type":"object","required":["peak_distance","layer_count"],"properties":{
		"peak_distance":{"type":"number"},"layer_count":{"type":"integer"},"confidence":{"type":"number","minimum":0,"maximum":1}}}`
	tests := []struct {
		name     string
		required []string
		schema   string
		paths    []string // nil: accepted
	}{
		{"seed", []string{"peak_distance", "layer_count", "confidence"}, seed, nil},
		{"none", nil, "", nil},
		{"null schema", nil, "null", nil},
		{"integer as number", nil, `{"properties":{"layer_count":{"type":"number"}}}`, nil},
		{"nested declared", nil, `{"properties":{"raman_analysis":{"type":"object","required":["e2g_cm1"]}}}`, nil},
		{"open object", nil, `{"properties":{"growth_log":{"items":{"properties":{"flows_sccm":{"required":["Ar"]}}}}}}`, nil},
		{"does not compile", nil, `{"type":"objekt"}`, []string{"/expected_output/schema"}},
		{"not json schema", nil, `{"minimum":"zero"}`, []string{"/expected_output/schema"}},
		{"required never produced", nil, `{"type":"object","required":["layer_count","bandgap_ev"]}`,
			[]string{"/expected_output/schema/required/1"}},
		{"required field never produced", []string{"peak_distance", "bandgap_ev"}, "", []string{"/expected_output/required_fields/1"}},
		{"type conflict", nil, `{"properties":{"layer_count":{"type":"string"}}}`,
			[]string{"/expected_output/schema/properties/layer_count/type"}},
		{"root type conflict", nil, `{"type":"array"}`, []string{"/expected_output/schema/type"}},
		{"nested never produced", nil, `{"properties":{"raman_analysis":{"required":["d_band"]}}}`,
			[]string{"/expected_output/schema/properties/raman_analysis/required/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := synth.CheckExpectedOutput(tt.required, json.RawMessage(tt.schema))
			if tt.paths == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ee *InputError
			if !errors.As(err, &ee) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err = %v, want an *InputError", err)
			}
			if got := ee.Paths(); !slices.Equal(got, tt.paths) {
				t.Fatalf("paths = %v, want %v (%v)", got, tt.paths, err)
			}
		})
	}
}
