package rigbuild

import (
	"context"
	"strings"
	"testing"
	"time"

	"hcp-edge/device/rig"
)

// twoZone is the third rig's rig section (configs/mos2-two-zone.yaml), edited.
func twoZone(t *testing.T, edit func(*rig.Config)) rig.Config {
	t.Helper()
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	c, err := rig.Load("../../configs/mos2-two-zone.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edit(&c)
	return c
}

func TestCheckTwoZoneClean(t *testing.T) {
	if p := problems(t, twoZone(t, func(*rig.Config) {})); p != "" {
		t.Fatalf("the two-zone draft: %s", p)
	}
}

func TestCheckListShape(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*rig.Config)
		want string
	}{
		{"a zone's controller of the wrong kind", func(c *rig.Config) { c.Zones[1].Controller.Profile = "adam-6052" }, `rig.zones[1].controller.profile: profile "adam-6052" is a io_module`},
		{"a head on a channel the profile lacks", func(c *rig.Config) { c.Gauges[0].Heads[1].Channel = "gauge3" }, `rig.gauges[0].heads[1].channel: profile pfeiffer-tpg-262 has no gauge "gauge3"`},
		{"an output on a channel its module lacks", func(c *rig.Config) {
			o := c.Outputs["pump"]
			o.Channel = "do9"
			c.Outputs["pump"] = o
		}, `rig.outputs.pump.channel: profile adam-6052 has no output channel "do9"`},
		{"a zone without a comms watchdog and no relay watchdog", func(c *rig.Config) { c.GPIO.RelayWatchdog = 0 }, "rig.zones[1].controller.profile: profile eurotherm-3200 has no comms watchdog"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if p := problems(t, twoZone(t, tt.edit)); !strings.Contains(p, tt.want) {
				t.Fatalf("problems:\n%s\nwant one mentioning %q", p, tt.want)
			}
		})
	}
}

// TestFactsOfZones: each zone has its own controller's facts and wires.
func TestFactsOfZones(t *testing.T) {
	c := twoZone(t, func(c *rig.Config) { c.Zones[1].Controller.Profile = "hcp-sim-tc" })
	ps, err := LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := FactsOf(c, ps)
	if err != nil {
		t.Fatal(err)
	}
	s, g := f.Zones["sulfur"], f.Zones["growth"]
	if !strings.HasPrefix(s.SetpointWire, "modbus rs485 unit 1 ") || !strings.Contains(s.SetpointWire, "(eurotherm-3200)") {
		t.Errorf("sulfur setpoint wire %q", s.SetpointWire)
	}
	if !strings.HasPrefix(g.SetpointWire, "modbus rs485 unit 2 ") || !strings.Contains(g.SetpointWire, "(hcp-sim-tc)") {
		t.Errorf("growth setpoint wire %q", g.SetpointWire)
	}
	if s.SetpointMax <= 0 || g.SetpointMax <= 0 || s == g {
		t.Errorf("zone facts: sulfur %+v, growth %+v", s, g)
	}
	if _, ok := f.Heads["chamber"]; !ok {
		t.Errorf("no facts of head chamber: %+v", f.Heads)
	}
	if _, ok := f.Heads["foreline"]; !ok {
		t.Errorf("no facts of head foreline: %+v", f.Heads)
	}
	var internal []string
	for _, w := range f.Internal {
		internal = append(internal, w.Channel)
	}
	if got := strings.Join(internal, ","); !strings.Contains(got, "sulfur.") || !strings.Contains(got, "tpg.unit") {
		t.Errorf("internal writes %s", got)
	}
	if !strings.HasPrefix(f.Outputs["pump"], "modbus main unit 2 ") {
		t.Errorf("pump wire %q", f.Outputs["pump"])
	}
}

// TestBuildZonesAndModules: a controller per zone and a module per module
// of the list shape, the zones' two units on one bus, each verified. The
// buses point at a TCP port nothing listens on (dialled only by Verify);
// the serial instruments are unreachable.
func TestBuildZonesAndModules(t *testing.T) {
	c := twoZone(t, func(c *rig.Config) {
		for name, b := range c.ModbusBuses {
			b.Transport, b.Address, b.Mode = rig.TransportTCP, "127.0.0.1:1", ""
			c.ModbusBuses[name] = b
		}
	})
	ps, err := LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	in := BuildPartial(c, ps, nil)
	t.Cleanup(func() { _ = in.Close() })
	if len(in.Zones) != 2 || in.Zones[0] == nil || in.Zones[1] == nil || in.Furnace != in.Zones[0] {
		t.Fatalf("zones %v, furnace %v; unreachable %v", in.Zones, in.Furnace, in.Unreachable)
	}
	if len(in.Modules) != 1 || in.Modules[0] == nil || in.DIO != in.Modules[0] || in.Module("dio") != in.DIO {
		t.Fatalf("modules %v; unreachable %v", in.Modules, in.Unreachable)
	}
	for _, name := range []string{"sulfur_tc", "growth_tc", "dio"} {
		if err := in.Unreachable[name]; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(in.Gauges) != 1 || in.Unreachable["tpg"] == nil {
		t.Errorf("gauges %v, unreachable %v", in.Gauges, in.Unreachable)
	}
	if len(in.DIO.Switches()) != len(c.Outputs) {
		t.Errorf("module dio has %d switches, the layout %d outputs", len(in.DIO.Switches()), len(c.Outputs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = in.Verify(ctx, time.Second)
	for _, want := range []string{in.Zones[0].String(), in.Zones[1].String(), in.DIO.String()} {
		if err == nil || !strings.Contains(err.Error(), want+": identity and settings") {
			t.Errorf("Verify: %v; want it to have tried %s", err, want)
		}
	}
}
