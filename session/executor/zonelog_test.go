package executor

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/envelope"
)

// twoZoneEnvelope is the test envelope on the simulated rig with a sulfur
// zone upstream of its furnace, renamed growth (configs/mos2-two-zone.yaml's
// shape): the sulfur zone's setpoint at most 220 °C, its trip at 240 °C.
func twoZoneEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	cfg := loadEnvelope(t).Config()
	cfg.Parameters = maps.Clone(cfg.Parameters)
	for _, what := range []string{envelope.ZoneSetpoint, envelope.ZoneRampRate, envelope.ZoneTemperature} {
		cfg.Parameters[envelope.ZoneChannel("growth", what)] = cfg.Parameters[envelope.ZoneChannel("furnace", what)]
		delete(cfg.Parameters, envelope.ZoneChannel("furnace", what))
	}
	f := func(v float64) *float64 { return &v }
	cfg.Parameters["sulfur.setpoint"] = envelope.Parameter{Min: f(0), Max: f(220), Unit: "celsius"}
	cfg.Parameters["sulfur.ramp_rate"] = envelope.Parameter{Min: f(0.5), Max: f(10), Unit: "celsius_per_minute"}
	cfg.Parameters["sulfur.temperature"] = envelope.Parameter{Max: f(240), Unit: "celsius"}
	spec := simrig.Spec()
	sulfur := envelope.FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(400),
		RampMax: device.KelvinPerMinute(50), ProcessValueMax: device.Celsius(500)}
	spec.Zones = []envelope.ZoneSpec{{Name: "sulfur", FurnaceSpec: sulfur}, {Name: "growth", FurnaceSpec: spec.Furnace}}
	spec.Furnace = sulfur
	env, err := envelope.Compile(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// twoZoneRig reads the sulfur zone at 180 °C (setpoint 200) and the
// growth zone at 750 °C (setpoint 750).
type twoZoneRig struct{ fakeRig }

func (r *twoZoneRig) Readings(ctx context.Context) envelope.Readings {
	rd := r.fakeRig.Readings(ctx)
	rd.Furnace = device.FurnaceStatus{ProcessValue: device.Celsius(180), Setpoint: device.Celsius(200), At: rd.At}
	rd.Zones = map[string]device.FurnaceStatus{"growth": {ProcessValue: device.Celsius(750), Setpoint: device.Celsius(750), At: rd.At}}
	return rd
}

// TestLogEveryZone: on a rig of two zones, every growth-log row holds both
// zones' temperature and setpoint by name, the CSV a temperature column
// per zone (temperature_sulfur_c, temperature_growth_c, in the
// configuration's order) and the process profile a temperature and a
// setpoint trace per zone with each zone's limits. A rig of one keeps its
// columns and traces as before.
func TestLogEveryZone(t *testing.T) {
	env := twoZoneEnvelope(t)
	clock, _ := NewScaledClock(1)
	var p proc
	p.begin(&Env{Rig: &twoZoneRig{fakeRig{env: env}}, Clock: clock})
	p.zone = "growth"
	for _, stage := range []string{"ramp", "grow"} {
		p.row(stage, p.env.Rig.Readings(context.Background()))
	}
	r := p.rows[0]
	if r.TemperatureC == nil || *r.TemperatureC != 750 || len(r.Zones) != 2 ||
		*r.Zones["sulfur"].TemperatureC != 180 || *r.Zones["sulfur"].SetpointC != 200 || *r.Zones["growth"].TemperatureC != 750 {
		t.Fatalf("row %+v, zones %+v", r, r.Zones)
	}
	zs := logZones(env)
	csv := string(growthCSV(p.rows, zs))
	if head, _, _ := strings.Cut(csv, "\n"); head != "elapsed_seconds,stage,temperature_c,temperature_sulfur_c,temperature_growth_c,pressure_pa" {
		t.Errorf("CSV header %q", head)
	}
	if !strings.Contains(csv, ",ramp,750,180,750,1") {
		t.Errorf("CSV %q: no row of both zones", csv)
	}
	doc := readSVG(t, profileSVG("Process profile: two zones", p.rows, env))
	for _, s := range []string{"sulfur temperature", "sulfur setpoint", "growth temperature", "growth setpoint"} {
		doc.has(t, s, 2)
	}
	for _, rule := range []string{"sulfur over_temperature trip 240 °C", "sulfur setpoint max 220 °C", "growth over_temperature trip"} {
		found := false
		for k := range doc.rules {
			found = found || strings.HasPrefix(k, rule)
		}
		if !found {
			t.Errorf("no rule %q in %v", rule, doc.rules)
		}
	}
	if _, ok := doc.series["furnace temperature"]; ok {
		t.Error("a furnace trace on the two-zone rig")
	}

	// A rig of one: no zones in the rows, the CSV's columns and the
	// profile's traces as before.
	var q proc
	q.begin(&Env{Rig: &fakeRig{env: loadEnvelope(t)}, Clock: clock})
	q.row("ramp", q.env.Rig.Readings(context.Background()))
	q.row("grow", q.env.Rig.Readings(context.Background()))
	if q.rows[0].Zones != nil || logZones(loadEnvelope(t)) != nil {
		t.Errorf("zones on a rig of one: %+v", q.rows[0])
	}
	if head, _, _ := strings.Cut(string(growthCSV(q.rows, nil)), "\n"); head != "elapsed_seconds,stage,temperature_c,pressure_pa" {
		t.Errorf("one-zone CSV header %q", head)
	}
	one := readSVG(t, profileSVG("Process profile", q.rows, loadEnvelope(t)))
	one.has(t, "furnace temperature", 2)
}

// TestRigStatusEveryZone: rig-status on a rig of two zones reports the
// first as furnace (as on a rig of one) and every zone by name under
// zones; on a rig of one there is no zones.
func TestRigStatusEveryZone(t *testing.T) {
	for _, tc := range []struct {
		name string
		rig  Rig
		want map[string]float64 // zone -> temperature
	}{
		{"two zones", &twoZoneRig{fakeRig{env: twoZoneEnvelope(t)}}, map[string]float64{"sulfur": 180, "growth": 750}},
		{"one zone", &fakeRig{env: loadEnvelope(t)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &statusRecipe{include: []string{"furnace"}}
			if err := r.Run(context.Background(), 0, &Env{Rig: tc.rig}); err != nil {
				t.Fatal(err)
			}
			zones, _ := r.out["zones"].(map[string]any)
			if r.out["furnace"] == nil || len(zones) != len(tc.want) || r.out["stale"] != nil {
				t.Fatalf("out %v", r.out)
			}
			for z, temp := range tc.want {
				if got, _ := zones[z].(map[string]any); got == nil || got["temperature_c"] != temp {
					t.Errorf("zone %s: %v, want %v °C", z, zones[z], temp)
				}
			}
			checkRigStatusDeclared(t, r.out)
		})
	}
}

// checkRigStatusDeclared checks out, rig-status's outputs, against the
// shipped declaration (configs/capabilities/rig-status.json): valid against
// its output schema, and every field, and every field of every zone's
// reading, one the schema names (the schema does not forbid others, so a
// field added to the outputs alone would pass validation unannounced).
func checkRigStatusDeclared(t *testing.T, out map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "capabilities", "rig-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"additionalProperties"`
	}
	var decl struct {
		Capability struct {
			OutputSchema json.RawMessage `json:"output_schema"`
		} `json:"capability"`
	}
	if err := json.Unmarshal(raw, &decl); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON("https://hcp-edge.invalid/rig-status.json", decl.Capability.OutputSchema, out); err != nil {
		t.Fatalf("rig-status's outputs against its declared output schema: %v", err)
	}
	var schema object
	if err := json.Unmarshal(decl.Capability.OutputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for k := range out {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("output %q is not in rig-status's declared output schema", k)
		}
	}
	zones, _ := out["zones"].(map[string]any)
	if len(zones) == 0 {
		return
	}
	var zs object
	if err := json.Unmarshal(schema.Properties["zones"], &zs); err != nil || zs.AdditionalProperties == nil {
		t.Fatalf("rig-status's declared zones: %v (%s)", err, schema.Properties["zones"])
	}
	for z, reading := range zones {
		for k := range reading.(map[string]any) {
			if _, ok := zs.AdditionalProperties.Properties[k]; !ok {
				t.Errorf("zone %s: field %q is not in rig-status's declared zones", z, k)
			}
		}
	}
}
