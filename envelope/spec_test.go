package envelope

import (
	"strings"
	"testing"

	"hcp-edge/device"
	"hcp-edge/device/rig"
)

// oneZone is a small layout and its facts: one zone, one process head, one
// line and its valve, one input.
func oneZone() (rig.Layout, rig.Facts) {
	l := rig.Layout{
		Zones:   []rig.Zone{{Name: "z", Controller: "tc"}},
		Heads:   []rig.Head{{Name: "g", Controller: "g", Role: rig.HeadProcess}},
		Outputs: []rig.Switch{{Name: "v", Channel: "coil 0"}, {Name: "p", Channel: "coil 1", Role: rig.RolePump}},
		Inputs:  []rig.Sense{{Name: "d", Channel: "di 0", Role: rig.RoleDoor}},
		Lines:   []rig.Line{{Gas: "X", Controller: "m", FullScale: device.SCCM(100), Hazard: rig.Inert, Valve: "v"}},
	}
	f := rig.Facts{
		Zones: map[string]rig.ZoneFacts{"z": {SetpointMax: device.Celsius(900), RampMax: device.KelvinPerMinute(10), ProcessValueMax: device.Celsius(1000),
			SetpointWire: "sp", HeaterWire: "he"}},
		Heads:   map[string]rig.HeadFacts{"g": {Min: 1e-3 * device.Millibar, Max: 1e3 * device.Millibar}},
		Lines:   map[string]string{"X": "m serial"},
		Outputs: map[string]string{"v": "coil 0", "p": "coil 1"},
	}
	return l, f
}

func TestSpecOf(t *testing.T) {
	l, f := oneZone()
	s, err := SpecOf(l, f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Roles.Pump != "p" || s.Roles.Door != "d" || len(s.Gases) != 1 || s.Gases[0].Hazard != rig.Inert ||
		s.Furnace.SetpointMax != device.Celsius(900) || s.Spectrometer != nil {
		t.Errorf("spec %+v", s)
	}
	if got := strings.Join(s.Inputs, ","); got != "d,"+rig.InputEStop+","+rig.InputLeak+","+rig.InputRelayFB {
		t.Errorf("inputs %s", got)
	}
	if s.Switches[len(s.Switches)-1].Name != rig.SwitchRelay || s.Wires[SwitchChannel("v")] != "coil 0" || s.Wires[FlowChannel("X")] != "m serial" {
		t.Errorf("switches %+v wires %v", s.Switches, s.Wires)
	}
}

func TestSpecOfRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*rig.Layout)
		want string
	}{
		{"a second zone without its ranges", func(l *rig.Layout) { l.Zones = append(l.Zones, rig.Zone{Name: "y"}) }, "zone y: no ranges"},
		{"no zone", func(l *rig.Layout) { l.Zones = nil }, "the rig has no heated zone"},
		{"no process head", func(l *rig.Layout) { l.Heads[0].Role = rig.HeadRoughing }, "no gauge head reads the process pressure"},
		{"a line's valve not an output", func(l *rig.Layout) { l.Lines[0].Valve = "w" }, `valve "w" is not an output`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, f := oneZone()
			tt.edit(&l)
			if _, err := SpecOf(l, f); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDrivable(t *testing.T) {
	l, _ := oneZone()
	if err := Drivable(l); err != nil {
		t.Fatalf("one zone: %v", err)
	}
	l.Zones = append(l.Zones, rig.Zone{Name: "y", Controller: "tc2"}, rig.Zone{Name: "x", Controller: "tc3"})
	if err := Drivable(l); err != nil {
		t.Fatalf("three zones: %v", err)
	}
	if err := Drivable(rig.Layout{}); err == nil {
		t.Fatalf("no zone: %v", err)
	}
}
