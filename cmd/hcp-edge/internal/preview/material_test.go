package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

// ws2Inputs is the WS2 recipe's task of issue 34 at temp °C.
func ws2Inputs(temp int) string {
	return fmt.Sprintf(`{"substrate":"SiO2/Si","growth_temperature":%d,"target_layers":1,"growth_duration":"PT30M"}`, temp)
}

// TestPreviewGrowsTheRecipesMaterial: the preview loads the boat with the
// precursor of the material the recipe grows and says so: WS2 from WO3,
// MoS2 from MoO3; its predicted layer count is what the run's own analysis
// (the tier-1 fit of the simulated spectrum) reports; a precursor given
// to the preview is taken as given.
func TestPreviewGrowsTheRecipesMaterial(t *testing.T) {
	cfg := simConfig(t)
	for _, tc := range []struct {
		name, capab, inputs string
		given               plant.Precursor
		material, boat      string
	}{
		{"WS2", "ws2-sulfurization", ws2Inputs(750), "", "WS2", "WO3"},
		{"MoS2", executor.CVDName, seedInputs, "", "MoS2", "MoO3"},
		{"WS2 with MoO3 given", "ws2-sulfurization", ws2Inputs(750), plant.MoO3, "MoS2", "MoO3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x, c := builtinCap(t, tc.capab)
			p, err := Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(tc.inputs)},
				Opts{Config: cfg, Capability: c, Precursor: tc.given})
			if err != nil || !p.Completed {
				t.Fatalf("%v %+v", err, p)
			}
			pr := p.Product
			t.Logf("%+v; outputs layer_count %v", pr, p.Outputs["layer_count"])
			if pr.Material != tc.material || pr.Precursor != tc.boat || pr.PrecursorBasis == "" || pr.PredictedLayerCount < 1 {
				t.Fatalf("product %+v", pr)
			}
			if tc.given == "" && (pr.ExpectedMaterial != tc.material || !strings.Contains(pr.PrecursorBasis, tc.material)) {
				t.Fatalf("product %+v", pr)
			}
			if tc.given != "" && pr.PrecursorBasis != "given to the preview" {
				t.Fatalf("basis %q", pr.PrecursorBasis)
			}
			if lc, _ := p.Outputs["layer_count"].(int); lc != pr.PredictedLayerCount {
				t.Errorf("predicted layer count %d, the preview's analysis %v", pr.PredictedLayerCount, p.Outputs["layer_count"])
			}
		})
	}
}

// TestPreviewUnsimulatedMaterial: a recipe that grows a material the
// simulated plant cannot grow is refused (ErrUnsimulated, ErrInput) before
// anything runs, naming the material and what the plant grows; one that
// names no material (auto) gets the simulator's default boat and says so.
func TestPreviewUnsimulatedMaterial(t *testing.T) {
	srcs, err := recipe.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var ws2 []byte
	for _, s := range srcs {
		if strings.HasSuffix(s.Name, "ws2-sulfurization.yaml") {
			ws2 = s.Data
		}
	}
	if !strings.Contains(string(ws2), "material: WS2") {
		t.Fatal("fixture: the shipped WS2 recipe's analyse phase moved")
	}
	load := func(material string) executor.Executor {
		data := strings.Replace(string(ws2), "material: WS2", "material: "+material, 1)
		data = strings.Replace(data, "name: ws2-sulfurization", "name: test-"+strings.ToLower(material), 1)
		r, err := recipe.Load("test.yaml", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		x, err := executor.NewRecipeExecutor(r)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	_, err = Run(context.Background(), load("MoSe2"), executor.Task{Inputs: json.RawMessage(ws2Inputs(800))}, Opts{Config: simConfig(t)})
	if !errors.Is(err, ErrUnsimulated) || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "MoSe2") ||
		!strings.Contains(err.Error(), "WS2 from WO3") {
		t.Fatalf("err %v", err)
	}
	t.Logf("refused: %v", err)
	p, err := Run(context.Background(), load("auto"), executor.Task{Inputs: json.RawMessage(ws2Inputs(750))}, Opts{Config: simConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Product.Precursor != "MoO3" || !strings.Contains(p.Product.PrecursorBasis, "auto") {
		t.Fatalf("auto: %+v", p.Product)
	}
}
