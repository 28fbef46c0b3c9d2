package recipe

import (
	"testing"

	"github.com/hcp-edge/hcp-edge/configs"
)

// TestShippedRecipesPass: every recipe of configs/recipes loads and passes
// Check against the shipped configs/sim.yaml envelope.
func TestShippedRecipesPass(t *testing.T) {
	env := simEnvelope(t)
	names := configs.Recipes().Names()
	if len(names) < 3 {
		t.Fatalf("shipped recipes: %v", names)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			data := configs.Recipes()[n]
			r, err := LoadFor(n, data, Hazards(env))
			if err != nil {
				t.Fatalf("Load:\n%v", err)
			}
			for _, p := range Check(r, env) {
				t.Errorf("%s", p)
			}
			t.Logf("%s %s: policy %+v", r.Name, r.Version, r.Policy())
		})
	}
}
