package rigconfig

import (
	"errors"
	"os"
	"strings"
	"testing"

	"hcp-edge/envelope"
)

const twoZoneDraft = "../../../../configs/drafts/mos2-two-zone.yaml"

// TestTwoZoneRigRefusedAtLoad: the draft third rig (two heated zones) is
// refused when the agent loads it, at rig.zones, with the envelope's typed
// refusal, before any driver is built.
func TestTwoZoneRigRefusedAtLoad(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	_, err := Load(twoZoneDraft)
	if err == nil {
		t.Fatal("the two-zone draft loaded")
	}
	var ze *envelope.ZonesError
	if !errors.As(err, &ze) || ze.Zones != 2 || !errors.Is(err, envelope.ErrNotDriven) {
		t.Fatalf("err = %v, want a *envelope.ZonesError of 2 zones", err)
	}
	if want := "rig.zones: a rig of 2 heated zones is not driven yet: the agent's wiring and executor drive one (issue 42)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to mention %q", err, want)
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
