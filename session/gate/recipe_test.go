package gate

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/session/capability"
	"hcp-edge/session/recipe"
	"hcp-edge/transport/wire"
)

// recipeGate is a gate whose registry holds the shipped recipes as
// capabilities (as the agent registers them).
func recipeGate(t *testing.T) *Gate {
	t.Helper()
	srcs, err := recipe.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var caps []*capability.Capability
	for _, s := range srcs {
		r, err := recipe.LoadFor(s.Name, s.Data, simHazards())
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.Capability()
		if err != nil {
			t.Fatal(err)
		}
		caps = append(caps, c)
	}
	reg, err := capability.NewRegistry(caps...)
	if err != nil {
		t.Fatal(err)
	}
	weekday := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	g, err := New(testConfig(), reg, &memRecorder{}, Opts{Clock: func() time.Time { return weekday }})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRecipeCapabilities: a recipe's rules the input_schema cannot express
// (a window's low end above its high end, a duration out of its range)
// reject the task invalid_input naming the field; the derived risk floor
// (WS2: 800 °C and above, R4) and data classification (MoS2 opens H2S: T2)
// are floors, whatever the task asks for.
func TestRecipeCapabilities(t *testing.T) {
	g := recipeGate(t)
	decide := func(capab, inputs, class string) Decision {
		t.Helper()
		s := &wire.TaskSubmit{Capability: capab, CallerID: "harness-alpha-001", Intent: "recipe gate test", Inputs: json.RawMessage(inputs)}
		if class != "" {
			s.Constraints = &wire.Constraints{DataClassification: class}
		}
		d, err := g.Decide(context.Background(), Request{MessageID: "m", BrokerUser: "alpha", Submit: s})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct{ name, capab, inputs, path string }{
		{"window upside down", "cvd-material-synthesis", `{"target_material":"MoS2","substrate":"quartz","temperature_range":{"min":740,"max":720}}`, "/inputs/temperature_range/max"},
		{"duration too long", "ws2-sulfurization", `{"substrate":"quartz","growth_duration":"PT2H"}`, "/inputs/growth_duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.capab, tc.inputs, "")
			if d.Outcome != Rejected || d.Rejection.Code != ReasonInvalidInput || !slices.Contains(d.Rejection.Paths, tc.path) {
				t.Fatalf("decision %v %+v, want invalid_input at %s", d.Outcome, d.Rejection, tc.path)
			}
		})
	}
	if d := decide("ws2-sulfurization", `{"substrate":"quartz","growth_temperature":750}`, ""); d.Outcome == Rejected || d.RiskLevel != "R4" {
		t.Errorf("WS2 at 750 °C: %v at %s, want R4 (its floor)", d.Outcome, d.RiskLevel)
	}
	if d := decide("cvd-material-synthesis", `{"target_material":"MoS2","substrate":"quartz"}`, "T1"); d.Outcome == Rejected || d.DataClassification != T2 {
		t.Errorf("MoS2 asked as T1: %v as %s, want T2 (its derived classification)", d.Outcome, d.DataClassification)
	}
}

// simHazards are the hazard classes of configs/sim.yaml's gas lines.
func simHazards() map[string]rig.Hazard {
	out := map[string]rig.Hazard{}
	for _, g := range simrig.Spec().Gases {
		out[g.Gas] = g.Hazard
	}
	return out
}
