package preview

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device/rig"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

const (
	// twoZoneConfig is the two-zone rig's configuration, mos2Solid its
	// shipped recipe and twoZoneTask the example task of it.
	twoZoneConfig = "../../../../configs/mos2-two-zone.yaml"
	mos2Solid     = "../../../../configs/recipes/mos2-solid.yaml"
	twoZoneTask   = "../../../../configs/examples/mos2-solid-task.json"
)

func twoZoneConf(t testing.TB) rigconfig.File {
	t.Helper()
	t.Setenv("HCP_RIG_SIM_DIR", t.TempDir()) // named, never opened
	f, err := rigconfig.Load(twoZoneConfig)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// solidExecutor is mos2-solid's executor and the example task's inputs.
func solidExecutor(t testing.TB) (executor.Executor, json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(mos2Solid)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recipe.Load(mos2Solid, data)
	if err != nil {
		t.Fatal(err)
	}
	x, err := executor.NewRecipeExecutor(r)
	if err != nil {
		t.Fatal(err)
	}
	task, err := os.ReadFile(twoZoneTask)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Payload struct {
			Inputs json.RawMessage `json:"inputs"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(task, &msg); err != nil {
		t.Fatal(err)
	}
	return x, msg.Payload.Inputs
}

// TestPreviewTwoZones: mos2-solid previews on the two-zone rig, each zone
// its own controller over the plant's zone: the growth zone heated first
// to its 750 °C, then the sulfur zone to its 200 °C (its vapour growing the
// film), both cold at the end, about one layer of MoS2, and a course per
// zone.
func TestPreviewTwoZones(t *testing.T) {
	x, inputs := solidExecutor(t)
	p, err := Run(context.Background(), x, executor.Task{Inputs: inputs}, Opts{Config: twoZoneConf(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Completed || len(p.Trips) != 0 || len(p.Refusals) != 0 {
		t.Fatalf("completed %v, failure %+v, trips %v, refusals %v", p.Completed, p.Failure, p.Trips, p.Refusals)
	}
	if len(p.Zones) != 2 || p.Zones[0].Name != "sulfur" || p.Zones[1].Name != "growth" {
		t.Fatalf("zones %+v", p.Zones)
	}
	s, g := p.Zones[0], p.Zones[1]
	t.Logf("%v; zones %+v; %s %.3f layers", p.ProcessTime, p.Zones, p.Product.Material, p.Product.Layers)
	if g.PeakC < 745 || g.PeakC > 770 || s.PeakC < 195 || s.PeakC > 215 {
		t.Errorf("peaks: growth %.1f °C, sulfur %.1f °C; want about 750 and 200", g.PeakC, s.PeakC)
	}
	if s.FinalC > 80 || g.FinalC > 80 || s.HeaterFullPowerS <= 0 || g.HeaterFullPowerS <= s.HeaterFullPowerS {
		t.Errorf("zones at the end %+v", p.Zones)
	}
	heat := func(name string) Step {
		return p.Steps[slices.IndexFunc(p.Steps, func(s Step) bool { return s.Name == name })]
	}
	if hg, hs := heat("heat_growth"), heat("heat_sulfur"); !hg.Ran || !hs.Ran || hs.Start < hg.Start+hg.Duration {
		t.Errorf("the sulfur zone heated before the growth zone was at temperature: %+v, %+v", hg, hs)
	}
	if p.Product.Material != "MoS2" || p.Product.PredictedLayerCount != 1 {
		t.Errorf("product %+v", p.Product)
	}
}

// TestPreviewRefusesZones: a planned run heating a zone the rig lacks is
// refused (ErrNoZone, an input error) with the zone and the rig's zones.
func TestPreviewRefusesZones(t *testing.T) {
	x, inputs := solidExecutor(t)
	_, err := Run(context.Background(), x, executor.Task{Inputs: inputs}, Opts{Config: simConfig(t)})
	if !errors.Is(err, ErrInput) || !errors.Is(err, ErrNoZone) || !strings.Contains(err.Error(), "the recipe heats a zone the rig lacks: zone growth") {
		t.Fatalf("err %v, want ErrNoZone naming the zone", err)
	}
}

type zonedRec struct {
	executor.Recipe
	zs []string
}

func (z zonedRec) Zones() []string { return z.zs }

// TestCheckZones: a plan naming the rig's zones, or none, is taken; one
// naming another is refused.
func TestCheckZones(t *testing.T) {
	two := rig.Layout{Zones: []rig.Zone{{Name: "sulfur"}, {Name: "growth"}}}
	for _, tc := range []struct {
		zs   []string
		want error
	}{{nil, nil}, {[]string{"growth", "sulfur"}, nil}, {[]string{"growth", "source"}, ErrNoZone}} {
		if err := checkZones(two, zonedRec{zs: tc.zs}); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%v: %v, want %v", tc.zs, err, tc.want)
		}
	}
}

// TestSimZones: each zone is the plant's zone at its controller's unit, the
// first the Furnace; a layout of several zones on a plant of one furnace,
// and a unit the plant's line lacks, are not simulated.
func TestSimZones(t *testing.T) {
	newPlant := func(r plant.Rig) *plant.Plant {
		o := plant.DefaultOpts()
		o.Rig = r
		if r != plant.RigMoS2 {
			o.FurnaceModel = plant.FurnaceEurotherm3200
		}
		p, err := plant.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	zone := func(name string, unit byte) rig.ZoneConfig {
		return rig.ZoneConfig{Name: name, Controller: rig.Controller{Name: name + "_tc", ModbusDevice: rig.ModbusDevice{Unit: unit}}}
	}
	two, one := newPlant(plant.RigMoS2TwoZone), newPlant(plant.RigMoS2)
	for _, tc := range []struct {
		name  string
		zones []rig.ZoneConfig
		p     *plant.Plant
		want  string // the Furnace's plant zone, "" none; "bad": refused
	}{
		{"line order", []rig.ZoneConfig{zone("x", 1), zone("y", 2)}, two, "0"},
		{"swapped", []rig.ZoneConfig{zone("y", 2), zone("x", 1)}, two, "1"},
		{"one furnace", []rig.ZoneConfig{zone("x", 1)}, one, ""},
		{"several on one furnace", []rig.ZoneConfig{zone("x", 1), zone("y", 2)}, one, "bad"},
		{"no such unit", []rig.ZoneConfig{zone("x", 1), zone("y", 3)}, two, "bad"},
	} {
		var er envelope.Rig
		err := simZones(rig.Config{Zones: tc.zones}, tc.p, nil, &er)
		several := er.Furnace != nil
		if tc.want == "bad" {
			if !errors.Is(err, ErrZoneUnsimulated) || !errors.Is(err, ErrInput) {
				t.Errorf("%s: %v, want ErrZoneUnsimulated", tc.name, err)
			}
			continue
		}
		if err != nil || several != (tc.want != "") {
			t.Errorf("%s: several %v, %v", tc.name, several, err)
			continue
		}
		if !several {
			continue
		}
		f, ok := er.Furnace.(*simZone)
		other := er.Zones[tc.zones[1].Name].(*simZone)
		if !ok || strconv.Itoa(f.i) != tc.want || f.i == other.i || f.name != tc.zones[0].Name+"_tc" {
			t.Errorf("%s: furnace %+v, other %+v", tc.name, er.Furnace, other)
		}
	}
}
