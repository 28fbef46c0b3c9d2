package recipe

import (
	"strings"
	"testing"

	"hcp-edge/configs"
)

// TestShippedRecipesPass: every recipe of configs/recipes loads and passes
// Check against the shipped configs/sim.yaml envelope, but for those made
// for another rig (forOtherRig): refused for a gas line or a zone this rig
// lacks, at the line that needs it. (cmd/hcp-edge/internal/recipes checks each
// shipped recipe on the rig it is made for.)
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
			probs := Check(r, env)
			if want, other := forOtherRig[r.Name]; other {
				found := false
				for _, p := range probs {
					found = found || (p.Rule == RuleRig && strings.Contains(p.String(), want))
				}
				if !found {
					t.Errorf("%s on the MoS2 rig: want a %s problem %q, got %v", r.Name, RuleRig, want, probs)
				}
				return
			}
			for _, p := range probs {
				t.Errorf("%s", p)
			}
			t.Logf("%s %s: policy %+v", r.Name, r.Version, r.Policy())
		})
	}
}

// forOtherRig are the shipped recipes made for another rig than
// configs/sim.yaml's, with what the MoS2 rig's check must say.
var forOtherRig = map[string]string{
	"graphene-cu": "graphene-cu.yaml:121: phases[6].hold.flows.CH4: this rig has no CH4 gas line",
	"mos2-solid":  "mos2-solid.yaml:92: phases[4].ramp.zone: this rig has no zone growth (zones: furnace)",
}
