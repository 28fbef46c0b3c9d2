package recipe

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/session/capability"
)

func shipped(t *testing.T, name string) *Recipe {
	t.Helper()
	data, ok := configs.Recipes()["recipes/"+name]
	if !ok {
		t.Fatalf("no shipped recipe %s", name)
	}
	r, err := LoadFor(name, data, Hazards(simEnvelope(t)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResolveMoS2Defaults: the MoS2 recipe with the inputs of today's
// example task resolves to the CVD executor's defaults (CVDOpts).
func TestResolveMoS2Defaults(t *testing.T) {
	r := shipped(t, "mos2-sulfurization.yaml")
	p, err := r.Resolve(json.RawMessage(`{"target_material":"MoS2","substrate":"SiO2/Si"}`))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ph := range p.Phases {
		kinds = append(kinds, ph.Name)
	}
	if want := "preflight pump_down leak_check purge ramp grow cool vent measure analyse"; strings.Join(kinds, " ") != want {
		t.Errorf("phases %v, want %s", kinds, want)
	}
	ph := p.Phases
	if pd := ph[1].PumpDown; pd.BasePressurePa != 5 || pd.Timeout != 30*time.Minute {
		t.Errorf("pump_down %+v", pd)
	}
	if lc := ph[2].LeakCheck; lc.Hold != 2*time.Minute || lc.MaxRatePaPerMin != 10 || lc.BasePressurePa != 5 {
		t.Errorf("leak_check %+v", lc)
	}
	if pu := ph[3].Purge; pu.Gas != "Ar" || pu.FlowSCCM != 100 || pu.Duration != 5*time.Minute {
		t.Errorf("purge %+v", pu)
	}
	if rp := ph[4].Ramp; rp.TemperatureC != 725 || rp.RateCPerMin != 20 || rp.SettleBandC != 5 {
		t.Errorf("ramp %+v", rp)
	}
	if h := ph[5].Hold; h.Duration != 15*time.Minute || !reflect.DeepEqual(h.Flows, []GasFlow{{"H2S", 3}}) || !reflect.DeepEqual(h.Close, []string{"H2S"}) {
		t.Errorf("grow %+v", h)
	}
	if ph[5].Stage != "material_growth" {
		t.Errorf("grow stage %q", ph[5].Stage)
	}
	if c := ph[6].Cool; c.Purge != 5*time.Minute || c.BelowC != 75 || !reflect.DeepEqual(c.Close, []string{"Ar"}) {
		t.Errorf("cool %+v", c)
	}
	if v := ph[7].Vent; v.PressurePa != 90000 {
		t.Errorf("vent %+v", v)
	}
	if m := ph[8].Measure; m.Integration != 5*time.Second {
		t.Errorf("measure %+v", m)
	}
	if a := ph[9].Analyse; a.Material != "MoS2" || a.TargetLayers != 1 {
		t.Errorf("analyse %+v", a)
	}
	if p.Cleanup.Purge != 5*time.Minute || p.Recipe.SHA256 != r.SHA256 || p.Recipe.Name != "cvd-material-synthesis" {
		t.Errorf("cleanup or identity: %+v %+v", p.Cleanup, p.Recipe)
	}
	// A checkpoint pins the plan: it survives JSON.
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	raw2, _ := json.Marshal(&back)
	if string(raw) != string(raw2) {
		t.Errorf("plan does not round-trip:\n%s\n%s", raw, raw2)
	}
}

// TestResolveInputs: the inputs reach the phases (a temperature window's
// midpoint); a value outside a declared range, or a window whose low end
// is above its high end, is an *capability.InputError naming the field.
func TestResolveInputs(t *testing.T) {
	r := shipped(t, "mos2-sulfurization.yaml")
	p, err := r.Resolve(json.RawMessage(`{"target_material":"MoS2","substrate":"quartz","temperature_range":{"min":730,"max":750},
		"growth_duration":"PT20M","carrier_gas":{"flow_sccm":150},"raman":{"integration_seconds":0.3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Phases[4].Ramp.TemperatureC != 740 || *p.Phases[5].Hold.TemperatureC != 740 || p.Phases[5].Hold.Duration != 20*time.Minute ||
		p.Phases[3].Purge.FlowSCCM != 150 || p.Phases[8].Measure.Integration != 300*time.Millisecond {
		t.Errorf("plan does not carry the inputs: %+v", p.Phases)
	}
	for _, tc := range []struct{ in, path string }{
		{`{"target_material":"MoS2","substrate":"quartz","temperature_range":{"min":800,"max":750}}`, "/temperature_range/min"},
		{`{"target_material":"MoS2","substrate":"quartz","temperature_range":{"min":740,"max":720}}`, "/temperature_range/max"},
		{`{"target_material":"MoS2","substrate":"quartz","temperature_range":{"min":720,"max":740,"unit":"kelvin"}}`, "/temperature_range/unit"},
		{`{"target_material":"MoS2","substrate":"quartz","growth_duration":"PT2H"}`, "/growth_duration"},
		{`{"target_material":"MoS2","substrate":"quartz","carrier_gas":{"flow_sccm":50}}`, "/carrier_gas/flow_sccm"},
		{`{"target_material":"WS2","substrate":"quartz"}`, "/target_material"},
		{`{"substrate":"quartz"}`, ""},
		{`{"target_material":"MoS2","substrate":"quartz","colour":"blue"}`, ""},
	} {
		_, err := r.Resolve(json.RawMessage(tc.in))
		var ie *capability.InputError
		if !errors.As(err, &ie) || !errors.Is(err, capability.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want an InputError", tc.in, err)
			continue
		}
		if tc.path != "" && !strings.Contains(strings.Join(ie.Paths(), " "), tc.path) {
			t.Errorf("%s: paths %v, want %s", tc.in, ie.Paths(), tc.path)
		}
	}
}

// TestCapabilityDeclaration: the MoS2 recipe's declaration is the shape of
// today's cvd-material-synthesis: same name, version, output schema,
// safety and budgets.
func TestCapabilityDeclaration(t *testing.T) {
	r := shipped(t, "mos2-sulfurization.yaml")
	c, err := r.Capability()
	if err != nil {
		t.Fatal(err)
	}
	today, err := capability.Parse(mustRead(t, "../../configs/capabilities/cvd-material-synthesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ref() != today.Ref() || c.Description != today.Description {
		t.Errorf("ref %v, want %v", c.Ref(), today.Ref())
	}
	// The recipe measures: its resources name the spectrometer (the gate
	// derives rig.measure from it, for a recipe the configuration has no
	// policy for); otherwise its safety section is today's.
	want := today.Safety
	want.ResourceTypes = append(slices.Clone(want.ResourceTypes), "raman_spectrometer")
	if !reflect.DeepEqual(c.Safety, want) || !reflect.DeepEqual(c.Budgets, today.Budgets) || c.Constraints != today.Constraints {
		t.Errorf("safety/budgets/constraints differ:\n%+v %+v %+v\n%+v %+v %+v", c.Safety, *c.Budgets, c.Constraints, want, *today.Budgets, today.Constraints)
	}
	var a, b any
	_ = json.Unmarshal(c.OutputSchema, &a)
	_ = json.Unmarshal(today.OutputSchema, &b)
	if !reflect.DeepEqual(a, b) {
		t.Error("output_schema differs from today's")
	}
	pol := r.Policy()
	if pol.RiskFloor != capability.R3 || pol.DataClassification != "T2" {
		t.Errorf("policy %+v", pol)
	}
	ws := shipped(t, "ws2-sulfurization.yaml").Policy()
	if ws.RiskFloor != capability.R4 {
		t.Errorf("WS2 reaches 850 °C: floor %s, want R4", ws.RiskFloor)
	}
	an := shipped(t, "h2-anneal.yaml")
	if an.Policy().RiskFloor != capability.R3 || an.Policy().DataClassification != "T1" || !strings.Contains(string(an.OutputSchema()), "process_log") {
		t.Errorf("anneal policy %+v", an.Policy())
	}
	if g := an.Policy().Budgets.GasVolume["H2"]; g < 50*120 {
		t.Errorf("H2 budget %g below 50 sccm × 2 h", g)
	}
}

// TestDuplicateVersion: the same name and version with different content
// is refused at the second file's version line.
func TestDuplicateVersion(t *testing.T) {
	a := mustRead(t, "../../configs/recipes/h2-anneal.yaml")
	b := []byte(strings.Replace(string(a), "duration: PT5M}\n  - cool", "duration: PT6M}\n  - cool", 1))
	if string(a) == string(b) {
		t.Fatal("no change")
	}
	env := simEnvelope(t)
	ok, ps := CheckAll(env, Source{"a.yaml", a}, Source{"a-again.yaml", a}, Source{"b.yaml", b})
	if len(ok) != 2 || len(ps) != 1 || ps[0].File != "b.yaml" || ps[0].Rule != RuleDuplicate || ps[0].Key != "version" ||
		!strings.Contains(ps[0].Message, "h2-anneal 1.0.0 is also a.yaml:") || !errors.Is(ps, ErrDuplicate) {
		t.Errorf("ok %d, problems %v", len(ok), ps)
	}
}

// TestResolveSeedTask: the inputs of today's example task
// (configs/examples/mos2-task.json, a temperature_range window) are
// accepted and grow at the window's midpoint, 725 °C.
func TestResolveSeedTask(t *testing.T) {
	r := shipped(t, "mos2-sulfurization.yaml")
	var seed struct {
		Payload struct {
			Inputs json.RawMessage `json:"inputs"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(mustRead(t, "../../configs/examples/mos2-task.json"), &seed); err != nil {
		t.Fatal(err)
	}
	p, err := r.Resolve(seed.Payload.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Phases[4].Ramp.TemperatureC != 725 || *p.Phases[5].Hold.TemperatureC != 725 {
		t.Errorf("ramp %+v, want 725 °C", p.Phases[4].Ramp)
	}
}

// TestMidpointRefused: a midpoint of an undeclared input, of one input
// twice, of a duration input, or with other than two ends is refused at
// its key.
func TestMidpointRefused(t *testing.T) {
	base := string(mustRead(t, "../../configs/recipes/mos2-sulfurization.yaml"))
	const mid = "{midpoint: [temperature_range.min, temperature_range.max]}"
	for _, tc := range []struct{ name, with, rule string }{
		{"undeclared", "{midpoint: [temperature_range.min, temperature_range.top]}", RuleUndeclaredInput},
		{"twice", "{midpoint: [temperature_range.min, temperature_range.min]}", RuleType},
		{"duration", "{midpoint: [temperature_range.min, growth_duration]}", RuleType},
		{"three ends", "{midpoint: [temperature_range.min, temperature_range.max, temperature_range.max]}", RuleType},
		{"with input", "{midpoint: [temperature_range.min, temperature_range.max], input: growth_duration}", RuleType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(base, mid, tc.with, 1)
			_, err := Load("m.yaml", []byte(src))
			var ps Problems
			if !errors.As(err, &ps) || !ps.has(tc.rule) || !strings.Contains(ps.Error(), "phases[4].ramp.temperature_c") {
				t.Fatalf("err %v, want %s at phases[4].ramp.temperature_c", err, tc.rule)
			}
		})
	}
}
