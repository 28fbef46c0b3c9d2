package rig

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"hcp-edge/configs"
)

const twoZoneDraft = "../../configs/mos2-two-zone.yaml"

func TestLoadTwoZoneDraft(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	c, err := Load(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Layout()
	if want := []Zone{{Name: "sulfur", Controller: "sulfur_tc"}, {Name: "growth", Controller: "growth_tc"}}; !reflect.DeepEqual(l.Zones, want) {
		t.Errorf("zones = %+v, want %+v", l.Zones, want)
	}
	for _, z := range []struct {
		name string
		unit byte
	}{{"sulfur_tc", 1}, {"growth_tc", 2}} {
		i, ok := l.Instrument(z.name)
		if !ok || i.Kind != KindTemperatureController || i.Bus != "rs485" || i.Unit != z.unit || i.Profile != "eurotherm-3200" {
			t.Errorf("controller %s = %+v (found %v), want rs485 unit %d", z.name, i, ok, z.unit)
		}
	}
	if ms := l.Of(KindIOModule); len(ms) != 1 || ms[0].Name != "dio" || ms[0].Bus != "main" || ms[0].Unit != 2 || ms[0].Key != "rig.modules[0]" {
		t.Errorf("modules = %+v", ms)
	}
	for _, o := range l.Outputs {
		if o.Module != "dio" {
			t.Errorf("output %s on module %q", o.Name, o.Module)
		}
	}
	want := []Head{{Name: "chamber", Controller: "tpg", Channel: "gauge1", Role: HeadProcess}, {Name: "foreline", Controller: "tpg", Channel: "gauge2", Role: HeadRoughing}}
	if !reflect.DeepEqual(l.Heads, want) {
		t.Errorf("heads = %+v, want %+v", l.Heads, want)
	}
	if g, ok := l.Instrument("tpg"); !ok || g.Kind != KindPressureGauge || g.Port != "/run/test-sim/gauge" {
		t.Errorf("gauge = %+v (found %v)", g, ok)
	}
	if len(l.Lines) != 1 || l.Lines[0].Gas != "Ar" || l.Lines[0].Hazard != Inert || l.Lines[0].Valve != "ar_valve" {
		t.Errorf("lines = %+v", l.Lines)
	}
}

// TestOneEntryShapeLayout pins the one-entry shape's mapping: one zone
// named furnace, one module named dio, one process head named as the gauge.
func TestOneEntryShapeLayout(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	c, err := Parse(configs.SimYAML)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Layout()
	if !reflect.DeepEqual(l.Zones, []Zone{{Name: FurnaceName, Controller: FurnaceName}}) {
		t.Errorf("zones = %+v", l.Zones)
	}
	if ms := l.Of(KindIOModule); len(ms) != 1 || ms[0].Name != DIOName || ms[0].Key != "rig.dio" {
		t.Errorf("modules = %+v", ms)
	}
	if len(l.Heads) != 1 || l.Heads[0].Role != HeadProcess || l.Heads[0].Name != c.GaugeName() || l.Heads[0].Controller != c.GaugeName() {
		t.Errorf("heads = %+v", l.Heads)
	}
	if f, ok := l.Instrument(FurnaceName); !ok || f.Key != "rig.furnace" {
		t.Errorf("furnace = %+v", f)
	}
}

func TestParseListShapeRefuses(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	b, err := os.ReadFile(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	base := string(b)
	for _, tt := range []struct{ name, from, to, want string }{
		{"zone named twice", "- name: growth", "- name: Sulfur", `rig.zones[1].name: "Sulfur" is also the name of zones[0]`},
		{"no zone", "  zones:\n    - name: sulfur\n      controller: {bus: rs485, unit: 1, profile: eurotherm-3200, name: sulfur_tc}\n    - name: growth\n      controller: {bus: rs485, unit: 2, profile: eurotherm-3200, name: growth_tc}\n", "",
			"rig.zones: missing: a layout has at least one heated zone"},
		{"two units at one address of one RTU line", "{bus: rs485, unit: 2, profile: eurotherm-3200, name: growth_tc}", "{bus: rs485, unit: 1, profile: eurotherm-3200, name: growth_tc}",
			"rig.zones[1].controller.unit: 1 is also zone sulfur's controller (rig.zones[0].controller)'s unit id on bus rs485"},
		{"a zone and a module at one address", "{name: dio, bus: main, unit: 2,", "{name: dio, bus: rs485, unit: 2,",
			"rig.modules[0].unit: 2 is also zone growth's controller (rig.zones[1].controller)'s unit id on bus rs485"},
		{"unknown head role", "role: roughing}", "role: foreline}", `rig.gauges[0].heads[1].role: unknown role "foreline" (process or roughing)`},
		{"two process heads", "role: roughing}", "role: process}", "rig.gauges[0].heads[1].role: head chamber also reads the process pressure"},
		{"no process head", "role: process}", "role: roughing}", "rig.gauges: no head reads the process pressure"},
		{"a gauge without heads", "      heads:\n        - {name: chamber, channel: gauge1, role: process}\n        - {name: foreline, channel: gauge2, role: roughing}\n", "",
			"rig.gauges[0].heads: missing"},
		{"output on an unknown module", "pump:       {module: dio,", "pump:       {module: dio2,", `rig.outputs.pump.module: "dio2" is not a module of the layout`},
		{"input on an unknown module", "door_closed:  {module: dio,", "door_closed:  {module: io,", `rig.inputs.door_closed.module: "io" is not a module of the layout`},
		{"furnace and zones", "  modules:\n", "  furnace: {bus: main, unit: 3, profile: eurotherm-3200}\n  modules:\n", "rig.zones: rig.furnace is written too"},
		{"dio and modules", "  modules:\n", "  dio: {bus: main, unit: 3, profile: adam-6052}\n  modules:\n", "rig.modules: rig.dio is written too"},
		{"gauge and gauges", "  gauges:\n", "  gauge: {port: /dev/ttyX, profile: pfeiffer-tpg-262}\n  gauges:\n", "rig.gauges: rig.gauge is written too"},
		{"one RS-485 line written as two buses", "    main:\n      transport: tcp\n      address: 127.0.0.1:5020\n", "    main:\n      transport: rtu\n      address: ${sim_dir}/modbus-rtu\n",
			"rig.modbus_buses.rs485.address: /run/test-sim/modbus-rtu is also the port of RS-485 line main (rig.modbus_buses): write one bus per RS-485 line"},
		{"a gauge on the RS-485 line", `port: "${sim_dir}/gauge"`, `port: "${sim_dir}/modbus-rtu"`, "rig.gauges[0].port: /run/test-sim/modbus-rtu is also the port of RS-485 line rs485"},
		{"a zone's name not a word", "- name: growth", "- name: Growth.Zone", `rig.zones[1].name: "Growth.Zone": a zone's name is a lower-case word`},
		{"controller named as another instrument", "name: growth_tc}", "name: mfc-ar}", `rig.mfcs[0].name: "mfc-ar" is also the name of zone growth's controller`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("fixture: %q not in the draft", tt.from)
			}
			_, err := Parse([]byte(strings.Replace(base, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestParseMixedKinds: each kind may be in its own shape (zones: with
// dio:), and the one-entry shape's fixed names stay reserved.
func TestParseMixedKinds(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	b, err := os.ReadFile(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	mixed := strings.Replace(string(b), "  modules:\n    - {name: dio, bus: main, unit: 2, profile: adam-6052}\n", "  dio: {bus: main, unit: 2, profile: adam-6052}\n", 1)
	c, err := Parse([]byte(mixed))
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.Layout().Of(KindIOModule); len(ms) != 1 || ms[0].Name != DIOName || ms[0].Key != "rig.dio" {
		t.Errorf("modules %+v", ms)
	}
	_, err = Parse([]byte(strings.Replace(mixed, "name: growth_tc}", "name: DIO}", 1)))
	if want := `rig.zones[1].controller.name: "DIO" is also the name of the digital I/O module`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to mention %q", err, want)
	}
}

func TestParseTwoModules(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	b, err := os.ReadFile(twoZoneDraft)
	if err != nil {
		t.Fatal(err)
	}
	two := strings.Replace(string(b), "    - {name: dio, bus: main, unit: 2, profile: adam-6052}\n",
		"    - {name: dio, bus: main, unit: 2, profile: adam-6052}\n    - {name: relays, bus: main, unit: 3, profile: adam-6052}\n", 1)
	two = strings.Replace(two, "vent_valve: {module: dio, channel: do5", "vent_valve: {module: relays, channel: do0", 1)
	c, err := Parse([]byte(two))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := c.Layout().Output("vent_valve"); o.Module != "relays" || o.Channel != "do0" {
		t.Errorf("vent_valve = %+v", o)
	}
	// With two modules, an output must say which it is on.
	_, err = Parse([]byte(strings.Replace(two, "pump:       {module: dio, ", "pump:       {", 1)))
	if err == nil || !strings.Contains(err.Error(), "rig.outputs.pump.module: missing: the layout has 2 I/O modules") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParse: Parse never panics, and a rig section it accepts, in either
// shape, maps to a layout of at least one zone, exactly one process head,
// and outputs and inputs each on an I/O module of the layout.
func FuzzParse(f *testing.F) {
	f.Add(configs.SimYAML)
	if b, err := os.ReadFile(twoZoneDraft); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		l := c.Layout()
		if len(l.Zones) == 0 {
			t.Fatalf("accepted a layout without a zone: %+v", l)
		}
		process := 0
		for _, h := range l.Heads {
			if h.Role == HeadProcess {
				process++
			}
		}
		if process != 1 {
			t.Fatalf("accepted %d process heads: %+v", process, l.Heads)
		}
		module := func(name string) bool {
			i, ok := l.Instrument(name)
			return ok && i.Kind == KindIOModule
		}
		for _, o := range l.Outputs {
			if !module(o.Module) {
				t.Fatalf("output %s on %q, no module of the layout", o.Name, o.Module)
			}
		}
		for _, in := range l.Inputs {
			if !module(in.Module) {
				t.Fatalf("input %s on %q, no module of the layout", in.Name, in.Module)
			}
		}
	})
}
