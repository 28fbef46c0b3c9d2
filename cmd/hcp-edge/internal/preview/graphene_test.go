package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/executor"
)

// grapheneConfig is the shipped configuration of the graphene rig.
func grapheneConfig(t testing.TB) rigconfig.File {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "configs", "graphene.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := rigconfig.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPreviewGraphene: the shipped graphene-cu recipe previewed with the
// graphene rig's configuration runs on the graphene plant (the layout's
// gas lines choose it): it completes, CH4 flows, and the product is
// graphene, a monolayer at 10 sccm and mostly bilayer at 40 sccm (as
// rig-sim --rig graphene grows it: TestGrapheneRig compares the two
// through the broker); on the MoS2 rig's configuration it is refused.
func TestPreviewGraphene(t *testing.T) {
	if testing.Short() {
		t.Skip("two whole graphene runs, in virtual time")
	}
	cfg := grapheneConfig(t)
	x, _, ok, err := shippedRecipe("graphene-cu")
	if err != nil || !ok {
		t.Fatalf("graphene-cu: %v %v", ok, err)
	}
	for _, c := range []struct {
		ch4    float64
		layers int
	}{{10, 1}, {40, 2}} {
		in := fmt.Sprintf(`{"substrate":"Cu foil","growth_temperature":1000,"anneal_duration":"PT10M","growth_duration":"PT10M","ch4_flow":%g}`, c.ch4)
		p, err := Run(context.Background(), x, executor.Task{SessionID: "preview-graphene", Inputs: json.RawMessage(in)}, Opts{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		pr := p.Product
		t.Logf("CH4 %g sccm: %v, gas %v scc, product %s film %v coverage %v quality %v count %d; outputs layer_count %v; boat %q: %s",
			c.ch4, p.ProcessTime, p.GasSCC, pr.Material, pr.Film, pr.Coverage, pr.Quality, pr.PredictedLayerCount, p.Outputs["layer_count"], pr.Precursor, pr.PrecursorBasis)
		if !p.Completed || len(p.Refusals) != 0 || len(p.Trips) != 0 {
			t.Fatalf("CH4 %g sccm: completed %v, refusals %v, trips %v, failure %+v", c.ch4, p.Completed, p.Refusals, p.Trips, p.Failure)
		}
		if pr.Material != pr.ExpectedMaterial || pr.PredictedLayerCount != c.layers || pr.Coverage == nil || pr.Precursor != "" {
			t.Errorf("CH4 %g sccm: product %+v", c.ch4, pr)
		}
		if lc, _ := p.Outputs["layer_count"].(int); lc != c.layers {
			t.Errorf("CH4 %g sccm: the analysis counted %v", c.ch4, p.Outputs["layer_count"])
		}
		for gas, v := range p.GasSCC {
			if v <= 0 && gas != "" {
				t.Errorf("no %s used", gas)
			}
		}
	}
	_, err = Run(context.Background(), x, executor.Task{SessionID: "p", Inputs: json.RawMessage(`{"substrate":"Cu foil"}`)}, Opts{Config: simConfig(t)})
	if !errors.Is(err, ErrUnsimulated) || !errors.Is(err, ErrInput) {
		t.Fatalf("graphene-cu on the MoS2 rig: %v", err)
	}
}
