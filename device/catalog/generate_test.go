package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/device/rig"
)

// TestGenerateOneZoneIsToday: the layouts of today's configurations
// generate the catalog the callers always saw, tool for tool: names, ids,
// texts, schemas, safety (testdata/*.today.json, written by the catalog
// as it was before it was generated from the layout). Graphene's rig has no
// exhaust scrubber, so it has no scrubber.set (a tool the interlock could
// only refuse before).
func TestGenerateOneZoneIsToday(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	graphene, err := os.ReadFile("../../configs/graphene.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		missing []string
	}{
		{"sim", configs.SimYAML, nil},
		{"graphene", graphene, []string{ToolSetScrubber}},
	} {
		c, err := rig.Parse(tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r, err := Generate(c.Layout(), "MoS2", "WS2")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var want []json.RawMessage
		b, err := os.ReadFile("testdata/" + tc.name + ".today.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got := r.List()
		i := 0
		for _, w := range want {
			var name struct{ Name string }
			_ = json.Unmarshal(w, &name)
			if slices.Contains(tc.missing, name.Name) {
				continue
			}
			if i >= len(got) {
				t.Errorf("%s: %s not generated", tc.name, name.Name)
				continue
			}
			g, err := json.Marshal(got[i])
			if err != nil {
				t.Fatal(err)
			}
			var cw, cg bytes.Buffer
			_ = json.Compact(&cw, w)
			_ = json.Compact(&cg, g)
			if cw.String() != cg.String() {
				t.Errorf("%s: tool %d differs:\n got %s\nwant %s", tc.name, i, cg.String(), cw.String())
			}
			i++
		}
		if i != len(got) {
			t.Errorf("%s: %d tools generated, %d expected", tc.name, len(got), i)
		}
	}
}

// twoZones is a rig of two heated zones (sulfur upstream, growth), a second
// I/O module with an output of no role, and one gas line.
func twoZones() rig.Layout {
	return rig.Layout{
		Instruments: []rig.Instrument{
			{Name: "tc_sulfur", Kind: rig.KindTemperatureController, Bus: "rs485", Unit: 1},
			{Name: "tc_growth", Kind: rig.KindTemperatureController, Bus: "rs485", Unit: 2},
			{Name: "dio", Kind: rig.KindIOModule}, {Name: "dio2", Kind: rig.KindIOModule},
			{Name: "mfc-ar", Kind: rig.KindFlowController},
		},
		Zones: []rig.Zone{{Name: "sulfur", Controller: "tc_sulfur"}, {Name: "growth", Controller: "tc_growth"}},
		Outputs: []rig.Switch{
			{Name: "ar_valve", Module: "dio"},
			{Name: "gate_valve", Module: "dio", Role: rig.RoleGate},
			{Name: "pump", Module: "dio", Role: rig.RolePump},
			{Name: "tape_heater", Module: "dio2"},
			{Name: "vent_valve", Module: "dio", Role: rig.RoleVent},
		},
		Lines: []rig.Line{{Gas: "Ar", Controller: "mfc-ar", Valve: "ar_valve", Hazard: rig.Inert}},
	}
}

func TestGenerateTwoZones(t *testing.T) {
	r, err := Generate(twoZones())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range r.List() {
		got = append(got, tl.Name)
		if !tl.Compiled() {
			t.Errorf("%s: not compiled", tl.Ref())
		}
		if tl.Name != ToolSnapshot && !tl.Compute() && !tl.Safety.Dangerous {
			t.Errorf("%s: an actuator tool must be dangerous", tl.Ref())
		}
	}
	want := []string{ToolVent, ToolSetFlow, ToolSetGate, "growth.set_heater", "growth.set_ramp_rate", "growth.set_setpoint",
		ToolSetPump, ToolAnalyze, ToolSnapshot, "sulfur.set_heater", "sulfur.set_ramp_rate", "sulfur.set_setpoint",
		"switch.tape_heater.set", ToolSetValve}
	if !slices.Equal(got, want) {
		t.Fatalf("tools:\n got %v\nwant %v", got, want)
	}
	// No furnace tool on a rig without a zone of that name; no scrubber,
	// no spectrometer where the layout has none.
	for _, absent := range []string{ToolSetSetpoint, ToolSetScrubber, ToolAcquire} {
		if _, err := r.Describe(absent, ""); err == nil {
			t.Errorf("%s generated for a rig without it", absent)
		}
	}
	// The zone tools take the furnace tool's inputs; their ids are their
	// own and stable.
	g, err := r.Describe("growth.set_setpoint", BuiltinVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ValidateInputJSON([]byte(`{"setpoint": 800, "unit": "celsius"}`)); err != nil {
		t.Errorf("growth.set_setpoint refuses a valid input: %v", err)
	}
	if err := g.ValidateInputJSON([]byte(`{"setpoint": 800}`)); err == nil {
		t.Error("growth.set_setpoint takes a setpoint without a unit")
	}
	s, _ := r.Describe("sulfur.set_setpoint", BuiltinVersion)
	if g.ID == s.ID || g.ID == toolID(ToolSetSetpoint) || toolID("growth.set_setpoint") != g.ID {
		t.Errorf("ids: growth %s, sulfur %s", g.ID, s.ID)
	}
	if !validUUID(g.ID) || g.Description != "Set zone growth's temperature setpoint; the controller ramps towards it at the ramp rate." {
		t.Errorf("growth.set_setpoint: %s %q", g.ID, g.Description)
	}
	v, _ := r.Describe(ToolSetValve, BuiltinVersion)
	if err := v.ValidateInputJSON([]byte(`{"valve": "tape_heater", "open": true}`)); err == nil {
		t.Error("valve.set takes an output that is no gas line's valve")
	}
}

func TestZoneToolNames(t *testing.T) {
	if ZoneTool(rig.FurnaceName, OpSetSetpoint) != ToolSetSetpoint || ZoneTool(rig.FurnaceName, OpSetRampRate) != ToolSetRampRate ||
		ZoneTool(rig.FurnaceName, OpSetHeater) != ToolSetHeater {
		t.Error("the furnace zone's tools are not today's")
	}
	for name, want := range map[string][2]string{
		"growth.set_setpoint": {"growth", OpSetSetpoint}, ToolSetHeater: {"furnace", OpSetHeater},
		"valve.set": {}, "set_setpoint": {}, "gas.set_flow": {},
	} {
		z, op, ok := ZoneOf(name)
		if ok != (want[0] != "") || z != want[0] || op != want[1] {
			t.Errorf("ZoneOf(%q) = %q, %q, %v", name, z, op, ok)
		}
	}
	if SwitchTool("tape_heater") != "switch.tape_heater.set" || RoleTool(rig.RoleVent) != ToolVent || RoleTool(rig.RoleDoor) != "" {
		t.Error("output tool names")
	}
}

// TestGenerateUnnamable: a zone whose name makes no tool name is an
// error; an output of such a name, of no role and no line, has no tool.
func TestGenerateUnnamable(t *testing.T) {
	l := twoZones()
	l.Outputs[3].Name = "Tape-Heater"
	r, err := Generate(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range r.List() {
		if strings.HasPrefix(tl.Name, "switch.") {
			t.Errorf("%s generated", tl.Name)
		}
	}
	l.Zones[1].Name = "Growth-1"
	if _, err := Generate(l); err == nil || !strings.Contains(err.Error(), `zone "Growth-1"`) {
		t.Errorf("a zone named Growth-1: %v", err)
	}
}
