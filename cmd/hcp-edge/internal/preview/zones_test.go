package preview

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hcp-edge/device/rig"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

const twoZoneRecipe = `name: two-zones
version: 1.0.0
description: heats two zones
phases:
  - preflight: {}
  - pump_down: {base_pressure_pa: 5, timeout: PT30M}
  - purge: {gas: Ar, flow_sccm: 100, duration: PT2M}
  - ramp: {zone: growth, temperature_c: 700, rate_c_per_min: 10}
  - ramp: {zone: sulfur, temperature_c: 180, rate_c_per_min: 10}
  - hold: {zone: growth, duration: PT10M, temperature_c: 700}
  - cool: {zone: growth, below_c: 60, timeout: PT3H}
  - cool: {zone: sulfur, below_c: 60, timeout: PT3H}
  - vent: {pressure_pa: 90000, timeout: PT15M}
cleanup: {purge: PT2M}
`

// TestPreviewRefusesZones: a recipe of several zones is refused, with the
// reason, rather than previewed on the one simulated furnace; so is one
// naming a zone the rig lacks.
func TestPreviewRefusesZones(t *testing.T) {
	for name, text := range map[string]string{
		"two zones":    twoZoneRecipe,
		"another zone": strings.ReplaceAll(twoZoneRecipe, "sulfur", "growth"),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := recipe.Load("two-zones.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			x, err := executor.NewRecipeExecutor(r)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(`{}`)}, Opts{Config: simConfig(t)})
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err %v, want ErrInput", err)
			}
			if name == "two zones" && (!errors.Is(err, ErrMultiZone) || !strings.Contains(err.Error(), "growth, sulfur")) {
				t.Errorf("err %v, want ErrMultiZone naming the zones", err)
			}
			if name == "another zone" && !strings.Contains(err.Error(), "the recipe heats zone growth; the rig's zone is furnace") {
				t.Errorf("err %v", err)
			}
		})
	}
}

type zonedRec struct {
	executor.Recipe
	zs []string
}

func (z zonedRec) Zones() []string { return z.zs }

// TestOneZone: the preview takes a one-zone rig and a recipe naming its
// zone or none, and refuses a rig of two zones whatever the recipe.
func TestOneZone(t *testing.T) {
	one := rig.Layout{Zones: []rig.Zone{{Name: "furnace"}}}
	two := rig.Layout{Zones: []rig.Zone{{Name: "sulfur"}, {Name: "growth"}}}
	for _, tc := range []struct {
		l    rig.Layout
		zs   []string
		want error
	}{
		{one, nil, nil}, {one, []string{"furnace"}, nil},
		{one, []string{"growth"}, ErrInput},
		{two, nil, ErrMultiZone}, {two, []string{"growth"}, ErrMultiZone},
	} {
		err := oneZone(tc.l, zonedRec{zs: tc.zs})
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%v, %v: %v, want %v", tc.l.Zones, tc.zs, err, tc.want)
		}
	}
}
