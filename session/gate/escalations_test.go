package gate

import (
	"reflect"
	"testing"

	"hcp-edge/device/rig"
	"hcp-edge/session/capability"
)

// TestDefaultEscalationsFromData: the built-in escalations, read from
// configs/gate/escalations.yaml, are the rules the gate has always had
// (high temperature → R4, a toxic sulfur source → R4), each valid, and the
// sulfur-source rule fires on a gas the layout calls toxic and on no other.
func TestDefaultEscalationsFromData(t *testing.T) {
	eight := 800.0
	want := []Escalation{
		{Name: "high_temperature", Capability: "cvd-material-synthesis", Path: "temperature_range.max",
			AtOrAbove: &eight, Unit: "celsius", Level: capability.R4},
		{Name: "h2s_precursor", Capability: "cvd-material-synthesis", Path: "sulfur_source",
			Hazards: []rig.Hazard{rig.Toxic}, Level: capability.R4},
	}
	got := DefaultConfig().Escalations
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("escalations %+v, want %+v", got, want)
	}
	cfg := DefaultConfig()
	if _, _, err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	hazards := map[string]rig.Hazard{"H2S": rig.Toxic, "H2": rig.Flammable, "Ar": rig.Inert}
	fired := escalate(got, "cvd-material-synthesis", map[string]any{"sulfur_source": "H2S"}, hazards)
	if len(fired) != 1 || fired[0].Rule != "h2s_precursor" || fired[0].Level != capability.R4 {
		t.Fatalf("a toxic sulfur source: fired %+v, want h2s_precursor R4", fired)
	}
	for _, src := range []string{"S", "H2", "Ar"} {
		if f := escalate(got, "cvd-material-synthesis", map[string]any{"sulfur_source": src}, hazards); len(f) != 0 {
			t.Errorf("sulfur source %s: fired %+v", src, f)
		}
	}
	if f := escalate(got, "leak-check", map[string]any{"sulfur_source": "H2S"}, hazards); len(f) != 0 {
		t.Errorf("another capability: fired %+v", f)
	}
	// A fresh copy each call: a caller's edit does not reach the next.
	got[0].Name = "edited"
	if DefaultConfig().Escalations[0].Name != "high_temperature" {
		t.Fatal("DefaultEscalations shares its result")
	}
}
