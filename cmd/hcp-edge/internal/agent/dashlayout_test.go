package agent

import (
	"slices"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/dashboard"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// TestDashboardLayout: the dashboard's channel list is the configuration's
// layout, for each shipped rig: the gas lines in rig.mfcs order with their
// hazard and valve, the outputs with their role or gas line, the inputs
// with the healthy level a rule of the configuration asks for (the
// graphene rig has no exhaust_ok input, and nothing of H2S or a scrubber),
// and the heated zones of the rig of several by name and controller (none
// on a rig of one).
func TestDashboardLayout(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name, file string
		gases      []string
		outputs    map[string]string // name -> role or gas
		healthy    map[string]*bool
		absent     []string
		zones      []dashboard.Zone
	}{
		{"MoS2", "../../../../configs/sim.yaml", []string{"Ar inert ar_valve", "H2 flammable h2_valve", "H2S toxic h2s_valve"},
			map[string]string{"pump": "pump", "h2s_valve": "H2S", "scrubber": "exhaust_scrubber", "vent_valve": "vent"},
			map[string]*bool{"door_closed": &yes, "exhaust_ok": &yes, "pump_running": nil, "estop_pressed": &no, "leak_detected": &no, "relay_fb": &yes},
			nil, nil},
		{"graphene", "../../../../configs/graphene.yaml", []string{"Ar inert ar_valve", "H2 flammable h2_valve", "CH4 flammable ch4_valve"},
			map[string]string{"pump": "pump", "ch4_valve": "CH4", "gate_valve": "gate", "vent_valve": "vent"},
			map[string]*bool{"door_closed": &yes, "pump_running": nil, "estop_pressed": &no, "leak_detected": &no, "relay_fb": &yes},
			[]string{"exhaust_ok", "scrubber", "h2s_valve"}, nil},
		{"two-zone", "../../../../configs/mos2-two-zone.yaml", []string{"Ar inert ar_valve"},
			map[string]string{"pump": "pump", "gate_valve": "gate", "scrubber": "exhaust_scrubber"},
			map[string]*bool{"door_closed": &yes, "estop_pressed": &no, "leak_detected": &no, "relay_fb": &yes},
			[]string{"h2s_valve"}, []dashboard.Zone{{Name: "sulfur", Controller: "sulfur_tc"}, {Name: "growth", Controller: "growth_tc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HCP_RIG_SIM_DIR", t.TempDir())
			f, err := rigconfig.Load(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			l := DashboardLayout(f)
			if !slices.Equal(l.Zones, tt.zones) {
				t.Errorf("zones %+v, want %+v", l.Zones, tt.zones)
			}
			var gases []string
			for _, g := range l.Gases {
				gases = append(gases, g.Gas+" "+g.Hazard+" "+g.Valve)
			}
			if len(gases) != len(tt.gases) {
				t.Fatalf("gas lines %q, want %q", gases, tt.gases)
			}
			for i := range gases {
				if gases[i] != tt.gases[i] {
					t.Errorf("gas line %d: %q, want %q", i, gases[i], tt.gases[i])
				}
			}
			outs := map[string]dashboard.Output{}
			for _, o := range l.Outputs {
				outs[o.Name] = o
			}
			for name, want := range tt.outputs {
				if o, ok := outs[name]; !ok || (o.Role != want && o.Gas != want) {
					t.Errorf("output %s: %+v, want role or gas %s", name, o, want)
				}
			}
			ins := map[string]dashboard.Input{}
			for _, i := range l.Inputs {
				ins[i.Name] = i
			}
			for name, want := range tt.healthy {
				i, ok := ins[name]
				switch {
				case !ok:
					t.Errorf("input %s not in the layout: %+v", name, l.Inputs)
				case (i.Healthy == nil) != (want == nil) || (want != nil && *i.Healthy != *want):
					t.Errorf("input %s healthy %v, want %v", name, i.Healthy, want)
				}
			}
			for _, name := range tt.absent {
				if _, ok := ins[name]; ok {
					t.Errorf("input %s in the layout of the %s rig", name, tt.name)
				}
				if _, ok := outs[name]; ok {
					t.Errorf("output %s in the layout of the %s rig", name, tt.name)
				}
			}
		})
	}
}
