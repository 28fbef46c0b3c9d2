package rigconfig

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/envelope"
)

const twoZoneDraft = "../../../../configs/mos2-two-zone.yaml"

// TestTwoZoneRigLoads: the third rig (two heated zones) loads: the agent
// drives a rig of several zones (issue 42), each zone's controller a
// zone of the envelope's spec.
func TestTwoZoneRigLoads(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	f, err := Load(twoZoneDraft)
	if err != nil {
		t.Fatalf("the two-zone rig: %v", err)
	}
	s, err := Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	if zs := s.ZoneNames(); strings.Join(zs, ",") != "sulfur,growth" {
		t.Fatalf("zones %v", zs)
	}
}

// TestOneZoneListShapeLoads: the draft with its second zone removed loads,
// and its spec derives from the list shape: the zone's own controller's
// profile, the module named in it, the process head of the two.
func TestOneZoneListShapeLoads(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	b, err := os.ReadFile(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	const second = "    - name: growth\n      controller: {bus: rs485, unit: 2, profile: eurotherm-3200, name: growth_tc}\n"
	if !strings.Contains(string(b), second) {
		t.Fatal("fixture: the growth zone is not in the draft")
	}
	r, err := Parse(strings.NewReader(strings.Replace(string(b), second, "", 1)))
	if err != nil {
		for _, e := range unjoin(err) {
			if strings.HasPrefix(e.Error(), "rig.") {
				t.Errorf("rig section: %v", e)
			}
		}
	}
	s, err := Spec(r.Rig)
	if err != nil {
		t.Fatal(err)
	}
	if s.Furnace.SetpointMax <= 0 || s.Gauge.Max <= s.Gauge.Min || len(s.Gases) != 1 {
		t.Errorf("spec %+v", s)
	}
	// The one zone is named sulfur: its channels are sulfur.* (furnace.*
	// are the channels of a zone named furnace).
	if zs := s.ZoneNames(); len(zs) != 1 || zs[0] != "sulfur" {
		t.Errorf("zones %v", zs)
	}
	if w := s.Wires[envelope.ZoneChannel("sulfur", envelope.ZoneSetpoint)]; !strings.Contains(w, "modbus rs485 unit 1") || !strings.Contains(w, "eurotherm-3200") {
		t.Errorf("setpoint wire %q", w)
	}
	if w := s.Wires[envelope.SwitchChannel("pump")]; !strings.Contains(w, "modbus main unit 2") {
		t.Errorf("pump wire %q", w)
	}
}

// TestTwoZoneDraftSpecAndEnvelope: the draft's rig section (rig.Load,
// rigbuild.FactsOf, envelope.SpecOf) is a spec of two zones in the
// layout's order, each with its own controller's ranges and wires, and the
// draft's envelope section compiles against it: each zone's limits and
// over_temperature trip its own.
func TestTwoZoneDraftSpecAndEnvelope(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	c, err := rig.Load(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := rigbuild.LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	facts, err := rigbuild.FactsOf(c, ps)
	if err != nil {
		t.Fatal(err)
	}
	s, err := envelope.SpecOf(c.Layout(), facts)
	if err != nil {
		t.Fatal(err)
	}
	if zs := s.ZoneNames(); strings.Join(zs, ",") != "sulfur,growth" {
		t.Fatalf("zones %v", zs)
	}
	if s.Furnace != s.Zones[0].FurnaceSpec || s.Zones[1].SetpointMax <= s.Zones[1].SetpointMin {
		t.Fatalf("zones %+v, furnace %+v", s.Zones, s.Furnace)
	}
	for _, tt := range []struct{ zone, unit string }{{"sulfur", "unit 1"}, {"growth", "unit 2"}} {
		for _, what := range []string{envelope.ZoneSetpoint, envelope.ZoneHeater} {
			if w := s.Wires[envelope.ZoneChannel(tt.zone, what)]; !strings.Contains(w, "modbus rs485 "+tt.unit) {
				t.Errorf("%s.%s wire %q", tt.zone, what, w)
			}
		}
	}
	if _, ok := s.Wires[envelope.ChannelSetpoint]; ok {
		t.Errorf("a furnace.setpoint wire on a rig without a zone furnace")
	}

	data, err := os.ReadFile(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Envelope yaml.Node `yaml:"envelope"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var cfg envelope.Config
	if err := doc.Envelope.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(cfg, s)
	if err != nil {
		t.Fatalf("the draft's envelope: %v", err)
	}
	now := time.Now()
	cool := device.FurnaceStatus{ProcessValue: device.Celsius(25), At: now}
	for _, tt := range []struct {
		name           string
		sulfur, growth device.Temperature
		trip           string
	}{
		{"the sulfur zone at 245 °C", device.Celsius(245), device.Celsius(25), "sulfur.temperature"},
		{"the growth zone at 905 °C", device.Celsius(25), device.Celsius(905), "growth.temperature"},
		{"the sulfur zone at 235 °C, the growth zone at 800 °C", device.Celsius(235), device.Celsius(800), ""},
	} {
		r := envelope.Readings{At: now, Furnace: cool, Zones: map[string]device.FurnaceStatus{"growth": cool}}
		r.Furnace.ProcessValue = tt.sulfur
		g := r.Zones["growth"]
		g.ProcessValue = tt.growth
		r.Zones["growth"] = g
		var got string
		for _, ev := range env.EvaluateTrips(r) {
			if ev.Trip == envelope.TripOverTemperature {
				got = ev.Channel
			}
		}
		if got != tt.trip {
			t.Errorf("%s: over_temperature on %q, want %q", tt.name, got, tt.trip)
		}
	}
}
