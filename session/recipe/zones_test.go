package recipe

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/configs"
	"hcp-edge/envelope"
)

// zoneCase loads and checks one recipe of testdata/zones on env.
func zoneCase(t *testing.T, file string, env *envelope.Envelope) (*Recipe, []Problem) {
	t.Helper()
	name := filepath.Join("testdata", "zones", file)
	data := mustRead(t, name)
	r, err := LoadFor(name, data, Hazards(env))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r, Check(r, env)
}

// wantProblem fails unless ps is exactly one problem of rule at
// FILE:LINE: key, its message holding msg.
func wantProblem(t *testing.T, ps []Problem, file string, line int, key, rule, msg string) {
	t.Helper()
	name := filepath.Join("testdata", "zones", file)
	if len(ps) != 1 || ps[0].File != name || ps[0].Line != line || ps[0].Key != key || ps[0].Rule != rule ||
		!strings.Contains(ps[0].Message, msg) {
		t.Errorf("want %s:%d: %s: …%s… [%s]; got:\n%v", name, line, key, msg, rule, Problems(ps))
	}
}

// TestZoneNamed: a recipe naming the rig's zone passes, and its plan says
// which zone each ramp, hold and cool acts on; the rig's zones are those
// whose setpoint the envelope bounds.
func TestZoneNamed(t *testing.T) {
	env := simEnvelope(t)
	if zs := Zones(env); !slices.Equal(zs, []string{"furnace"}) {
		t.Fatalf("Zones = %v", zs)
	}
	r, ps := zoneCase(t, "ok.yaml", env)
	if len(ps) > 0 {
		t.Fatalf("refused:\n%v", Problems(ps))
	}
	if zs := ZonesOf(r); !slices.Equal(zs, []string{"furnace"}) {
		t.Errorf("ZonesOf = %v", zs)
	}
	p, err := r.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range p.Phases {
		if want := map[Kind]string{KindRamp: "furnace", KindHold: "furnace", KindCool: "furnace"}[ph.Kind]; ph.Zone != want {
			t.Errorf("%s: zone %q, want %q", ph.Name, ph.Zone, want)
		}
	}
}

// TestZoneUnknown: a step heating a zone the rig lacks is refused at the
// line of its zone: key.
func TestZoneUnknown(t *testing.T) {
	_, ps := zoneCase(t, "unknown-zone.yaml", simEnvelope(t))
	wantProblem(t, ps, "unknown-zone.yaml", 9, "phases[3].ramp.zone", RuleRig, "this rig has no zone growth (zones: furnace)")
}

// TestZoneUnknownLine: a gas line the rig lacks, at its line.
func TestZoneUnknownLine(t *testing.T) {
	_, ps := zoneCase(t, "unknown-line.yaml", simEnvelope(t))
	wantProblem(t, ps, "unknown-line.yaml", 13, "phases[4].hold.flows.N2", RuleRig, "this rig has no N2 gas line (lines: Ar, H2, H2S)")
}

// TestZoneOnlyWhereHeated: zone: is a key of ramp, hold and cool only.
func TestZoneOnlyWhereHeated(t *testing.T) {
	name := filepath.Join("testdata", "zones", "zone-on-purge.yaml")
	_, err := Load(name, mustRead(t, name))
	ps, _ := err.(Problems)
	wantProblem(t, ps, "zone-on-purge.yaml", 7, "phases[2].purge.zone", RuleUnknownKey, "unknown key")
}

// TestZoneUnknownOutput: a pump-down on a rig whose layout has no pump is
// refused at the phase's line, naming the role.
func TestZoneUnknownOutput(t *testing.T) {
	b, err := os.ReadFile("../../configs/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Envelope envelope.Config `yaml:"envelope"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc.Envelope.Unrestricted, "switch.pump")
	spec := simrig.Spec()
	spec.Roles.Pump = ""
	spec.Switches = slices.DeleteFunc(spec.Switches, func(s envelope.SwitchSpec) bool { return s.Name == "pump" })
	delete(spec.Wires, envelope.SwitchChannel("pump"))
	env, err := envelope.Compile(doc.Envelope, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, ps := zoneCase(t, "ok.yaml", env)
	var pumps []Problem
	for _, p := range ps {
		if strings.Contains(p.Message, "no pump output") {
			pumps = append(pumps, p)
		}
	}
	if len(pumps) != 2 || pumps[0].Line != 6 || pumps[0].Key != "phases[1].pump_down" || pumps[0].Rule != RuleRig ||
		pumps[1].Line != 11 || pumps[1].Key != "phases[6].vent" {
		t.Errorf("want the pump_down at line 6 and the vent at line 11 refused for the pump; got:\n%v", Problems(ps))
	}
}

// TestZonesOfSeveral: on a rig of several zones, a ramp, hold or cool
// must name its zone, and a zone the rig lacks is refused (CheckZones:
// Check's refusals of the zones, without an envelope).
func TestZonesOfSeveral(t *testing.T) {
	env := simEnvelope(t)
	for file, want := range map[string][]string{
		"ok.yaml": {"ok.yaml:8: phases[3].ramp.zone: this rig has no zone furnace (zones: growth, sulfur)",
			"ok.yaml:9: phases[4].hold.zone:", "ok.yaml:10: phases[5].cool.zone:"},
		// The ramp names growth; the hold and the cool name nothing.
		"unknown-zone.yaml": {"unknown-zone.yaml:12: phases[4].hold: this rig has 2 heated zones (growth, sulfur): say which one the hold acts on",
			"unknown-zone.yaml:13: phases[5].cool: this rig has 2 heated zones"},
	} {
		name := filepath.Join("testdata", "zones", file)
		r, err := LoadFor(name, mustRead(t, name), Hazards(env))
		if err != nil {
			t.Fatal(err)
		}
		ps := CheckZones(r, []string{"growth", "sulfur"}) // Check's zones, without an envelope
		if len(ps) != len(want) {
			t.Errorf("%s: want %d problems, got:\n%v", file, len(want), Problems(ps))
		}
		for _, w := range want {
			if !strings.Contains(Problems(ps).Error(), w) {
				t.Errorf("%s: want …%s…, got:\n%v", file, w, Problems(ps))
			}
		}
	}
}

// TestZoneSchema: configs/recipe.schema.json takes zone: on a ramp, a hold
// and a cool, and nowhere else, as Load does.
func TestZoneSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(configs.RecipeSchema()))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://hcp-edge.invalid/configs/recipe.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	for file, ok := range map[string]bool{"ok.yaml": true, "unknown-zone.yaml": true, "zone-on-purge.yaml": false} {
		err := s.Validate(jsonOf(t, mustRead(t, filepath.Join("testdata", "zones", file))))
		if (err == nil) != ok {
			t.Errorf("%s: schema says %v", file, err)
		}
	}
}

// TestZoneOfAnotherName: on a rig whose one zone is named main (its
// channels main.*), the recipe naming it, and the same recipe naming no
// zone, pass: the model drives main's channels, not furnace's.
func TestZoneOfAnotherName(t *testing.T) {
	sim := simEnvelope(t)
	cfg, spec := sim.Config(), sim.Spec()
	params := map[string]envelope.Parameter{}
	for ch, p := range cfg.Parameters {
		if zn, what, _ := strings.Cut(ch, "."); zn == "furnace" {
			ch = envelope.ZoneChannel("main", what)
		}
		params[ch] = p
	}
	cfg.Parameters = params
	spec.Zones = []envelope.ZoneSpec{{Name: "main", FurnaceSpec: spec.Furnace}}
	for ch, w := range spec.Wires {
		if zn, what, _ := strings.Cut(ch, "."); zn == "furnace" {
			delete(spec.Wires, ch)
			spec.Wires[envelope.ZoneChannel("main", what)] = w
		}
	}
	env, err := envelope.Compile(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	if zs := Zones(env); !slices.Equal(zs, []string{"main"}) {
		t.Fatalf("Zones = %v", zs)
	}
	data := mustRead(t, filepath.Join("testdata", "zones", "ok.yaml"))
	for _, text := range []string{strings.ReplaceAll(string(data), "zone: furnace, ", "zone: main, "),
		strings.ReplaceAll(string(data), "zone: furnace, ", "")} {
		r, err := LoadFor("main.yaml", []byte(text), Hazards(env))
		if err != nil {
			t.Fatal(err)
		}
		if ps := Check(r, env); len(ps) > 0 {
			t.Errorf("refused:\n%v\n%s", Problems(ps), text)
		}
	}
}
