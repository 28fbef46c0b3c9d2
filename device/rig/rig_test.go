package rig

import (
	"os"
	"strings"
	"testing"

	"hcp-edge/configs"
)

func TestParseSimAndGraphene(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	graphene, err := os.ReadFile("../../configs/graphene.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"sim.yaml": configs.SimYAML, "graphene.yaml": graphene} {
		c, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l := c.Layout()
		if len(l.Zones) != 1 || len(l.Heads) != 1 || len(l.Lines) != len(c.MFCs) || len(l.Of(KindIOModule)) != 1 {
			t.Errorf("%s: layout %+v", name, l)
		}
		for _, ln := range l.Lines {
			if !ln.Hazard.Valid() || ln.FullScale <= 0 {
				t.Errorf("%s: line %+v", name, ln)
			}
			if _, ok := l.Output(ln.Valve); !ok {
				t.Errorf("%s: line %s: valve %s is no output", name, ln.Gas, ln.Valve)
			}
		}
		if l.Role(RolePump) == "" {
			t.Errorf("%s: no pump", name)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	base := string(configs.SimYAML)
	for _, tt := range []struct{ name, from, to, want string }{
		{"unknown hazard", "hazard: toxic", "hazard: spicy", `rig.mfcs[2].hazard: "spicy": every gas line names its hazard class (inert, toxic, flammable, oxidising or corrosive)`},
		{"unknown rig key", "  sim_dir:", "  sim_dri:", "field sim_dri not found"},
		{"two mfcs of one name", "{name: mfc-h2, profile:", "{name: mfc-ar, profile:", `rig.mfcs[1].name: "mfc-ar" is also the name of mfcs[0]`},
		{"one port twice", `port: "${sim_dir}/gauge"`, `port: "${sim_dir}/mfc-h2s"`, "rig.gauge.port: /run/test-sim/mfc-h2s is also the port of mfcs[2]"},
		{"one unit twice", "dio: {bus: main, unit: 2,", "dio: {bus: main, unit: 1,", "rig.dio.unit: 1 is also the furnace controller's unit id on bus main"},
		{"unknown role", "role: exhaust_scrubber", "role: fan", `unknown role "fan"`},
		{"no furnace", "  furnace: {bus: main, unit: 1, profile: hcp-sim-tc}\n", "", "rig.furnace: missing: a layout has at least one heated zone (rig.furnace, or rig.zones for several)"},
		{"no dio", "  dio: {bus: main, unit: 2, profile: hcp-sim-dio}\n", "", "rig.dio: missing: a layout has at least one I/O module (rig.dio, or rig.modules for several)"},
		{"no gauge", "  gauge: {name: gauge, profile: hcp-sim-gauge, port: \"${sim_dir}/gauge\", mode: 9600 8N1}\n", "", "rig.gauge: missing: a layout has at least one gauge controller (rig.gauge, or rig.gauges for several)"},
		{"an output on a module other than dio", "pump:       {channel: coil0,", "pump:       {module: io, channel: coil0,", `rig.outputs.pump.module: "io" is not a module of the layout`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("fixture: %q not in sim.yaml", tt.from)
			}
			_, err := Parse([]byte(strings.Replace(base, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestParseHazard(t *testing.T) {
	for _, h := range Hazards() {
		if got, err := ParseHazard(string(h)); err != nil || got != h {
			t.Errorf("ParseHazard(%q) = %q, %v", h, got, err)
		}
	}
	for _, s := range []string{"", "Toxic", "spicy", "oxidizing"} {
		if _, err := ParseHazard(s); err == nil {
			t.Errorf("ParseHazard(%q) accepted", s)
		}
	}
}
