package rigconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"hcp-edge/device/rig"

	"hcp-edge/envelope"
)

// TestGrapheneRigIsConfiguration: the second rig, configs/graphene.yaml,
// is data only: its layout parses into a RigSpec with Ar inert, H2 and CH4
// flammable, no scrubber, and an envelope that compiles against it with
// the copper's margin, H2 and CH4 only under vacuum, the vent cold.
func TestGrapheneRigIsConfiguration(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "configs", "graphene.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	hazards := map[string]rig.Hazard{}
	for _, g := range spec.Gases {
		hazards[g.Gas] = g.Hazard
	}
	want := map[string]rig.Hazard{"Ar": rig.Inert, "H2": rig.Flammable, "CH4": rig.Flammable}
	if len(hazards) != len(want) {
		t.Fatalf("gas lines %v, want %v", hazards, want)
	}
	for g, h := range want {
		if hazards[g] != h {
			t.Errorf("%s: hazard %q, want %q", g, hazards[g], h)
		}
	}
	if spec.Roles.Scrubber != "" {
		t.Errorf("a scrubber on the graphene rig: %q", spec.Roles.Scrubber)
	}
	if spec.Roles.Pump == "" || spec.Roles.Gate == "" || spec.Roles.Vent == "" {
		t.Errorf("roles %+v: pump, gate and vent wanted", spec.Roles)
	}
	if _, err := envelope.Compile(f.Envelope, spec); err != nil {
		t.Fatalf("the envelope does not compile against the layout: %v", err)
	}
	const copperMeltsC = 1085
	sp := f.Envelope.Parameters["furnace.setpoint"]
	if sp.Max == nil || *sp.Max >= copperMeltsC || sp.HardLimit == nil || !*sp.HardLimit {
		t.Fatalf("furnace.setpoint %+v: a hard limit below copper's melting point wanted", sp)
	}
	if tr := f.Envelope.Parameters["furnace.temperature"]; tr.Max == nil || *tr.Max >= copperMeltsC || *tr.Max <= *sp.Max {
		t.Fatalf("over-temperature trip %+v: between the setpoint limit and the melting point wanted", tr)
	}
	for _, g := range []string{"H2", "CH4"} {
		il, ok := f.Envelope.Interlocks.Gases[g]
		if !ok || il.MaxPressure.Unit != "mbar" || il.MaxPressure.Value > 10 {
			t.Errorf("%s: interlock %+v: only under vacuum (10 mbar at most) wanted", g, il)
		}
	}
	if v := f.Envelope.Vent; v == nil || v.MaxTemperature.Value > 80 {
		t.Errorf("vent %+v: only cold wanted", v)
	}
	if f.Rig.GPIO.RelayWatchdog <= 0 {
		t.Error("the Eurotherm 3200 has no comms watchdog: gpio.relay_watchdog wanted")
	}
}
