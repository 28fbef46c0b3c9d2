package capability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const configDir = "../../configs/capabilities"

func loadConfigs(t *testing.T) *Registry {
	t.Helper()
	r, err := LoadDir(configDir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestShippedDeclarations(t *testing.T) {
	r := loadConfigs(t)
	tests := []struct {
		name     string
		risk     RiskLevel
		approval bool
		maxDur   time.Duration
		limit    int
	}{
		{"cvd-material-synthesis", R4, true, 72 * time.Hour, 1},
		{"leak-check", R2, false, time.Hour, 1},
		{"rig-status", R1, false, time.Minute, 4},
	}
	var got []string
	for _, c := range r.All() {
		got = append(got, c.Name+"@"+c.SemVer.String())
	}
	if !slices.Equal(got, []string{"cvd-material-synthesis@1.0.0", "leak-check@1.0.0", "rig-status@1.0.0"}) {
		t.Fatalf("loaded %v", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := r.Resolve(tt.name, "1.x")
			if err != nil {
				t.Fatal(err)
			}
			if c.Safety.RiskCeiling != tt.risk || c.Safety.RequiresHumanApproval != tt.approval ||
				c.MaxDuration != tt.maxDur || c.Constraints.ConcurrentLimit != tt.limit || c.AbortTimeout <= 0 {
				t.Fatalf("%+v", c.Declaration)
			}
			if c.Ref() != (Ref{tt.name, "1.0.0"}) {
				t.Fatalf("Ref = %+v", c.Ref())
			}
		})
	}
}

// seedInputs is the MoS2 task of seeds/002.
const seedInputs = `{"target_material": "MoS2", "substrate": "SiO2/Si",
	"temperature_range": {"min": 700, "max": 750, "unit": "celsius"}}`

func TestSynthesisInputs(t *testing.T) {
	c, err := loadConfigs(t).Resolve("cvd-material-synthesis", "1.x")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    string
		paths []string // nil: valid
	}{
		{"seed", seedInputs, nil},
		{"kelvin", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":973.15,"max":1023.15,"unit":"kelvin"}}`, nil},
		{"full", `{"target_material":"WS2","substrate":"sapphire","temperature_range":{"min":800,"max":850},"target_layers":2,
			"growth_duration":"PT20M","carrier_gas":{"gas":"Ar","flow_sccm":50},"raman":{"integration_seconds":2,"excitation_nm":532}}`, nil},
		{"missing substrate", `{"target_material":"MoS2"}`, []string{""}},
		{"unknown field", `{"target_material":"MoS2","substrate":"SiO2/Si","pressure":3}`, []string{""}},
		{"too hot", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":1200}}`, []string{"/temperature_range/max"}},
		{"too hot kelvin", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":1300,"unit":"kelvin"}}`, []string{"/temperature_range/max"}},
		{"bad unit", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"F"}}`, []string{"/temperature_range/unit"}},
		{"two errors", `{"target_material":"gold","substrate":"SiO2/Si","target_layers":0}`, []string{"/target_layers", "/target_material"}},
		{"flow over envelope", `{"target_material":"MoS2","substrate":"SiO2/Si","carrier_gas":{"gas":"Ar","flow_sccm":500}}`, []string{"/carrier_gas/flow_sccm"}},
		{"empty duration", `{"target_material":"MoS2","substrate":"SiO2/Si","growth_duration":"PT"}`, []string{"/growth_duration"}},
		{"not an object", `[1,2]`, []string{""}},
		{"not JSON", `{"target_material":`, []string{""}},
		{"trailing data", seedInputs + `{}`, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.ValidateInput([]byte(tt.in))
			if tt.paths == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err = %v, want *InputError", err)
			}
			if !slices.Equal(ie.Paths(), tt.paths) {
				t.Fatalf("paths %q, want %q (%v)", ie.Paths(), tt.paths, err)
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	r := loadConfigs(t)
	tests := []struct {
		capability, out string
		ok              bool
	}{
		{"cvd-material-synthesis", `{"peak_distance":18.9,"layer_count":1,"confidence":0.93,"material_matches_recipe":true,
			"raman_analysis":{"e2g_cm1":385.1,"a1g_cm1":404.0,"peak_distance":18.9,"layer_count":1,"confidence":0.93,
				"material":{"name":"MoS2","confidence":0.97,"expected":"MoS2","matches_recipe":true}},
			"growth_log":[{"elapsed_seconds":0,"stage":"pump_down","pressure_pa":1e5}]}`, true},
		{"cvd-material-synthesis", `{"peak_distance":18.9,"layer_count":1.5,"raman_analysis":{},"growth_log":[]}`, false},
		{"rig-status", `{"taken_at":"2026-11-22T08:00:00Z","interlock":{"latched":false},"furnace":{"temperature_c":null}}`, true},
		{"rig-status", `{"taken_at":"yesterday"}`, false},
		{"leak-check", `{"passed":true,"base_pressure_pa":4.1,"rate_of_rise_pa_per_min":0.2,"hold_seconds":300}`, true},
		{"leak-check", `{"passed":"yes","base_pressure_pa":4.1,"rate_of_rise_pa_per_min":0.2,"hold_seconds":300}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.capability, func(t *testing.T) {
			c, err := r.Resolve(tt.capability, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ValidateOutput([]byte(tt.out)); (err == nil) != tt.ok {
				t.Fatalf("ValidateOutput = %v, want ok %v", err, tt.ok)
			}
		})
	}
	// rig-status and leak-check take {} (all defaults)
	for _, name := range []string{"rig-status", "leak-check"} {
		c, _ := r.Resolve(name, "1.0.0")
		if err := c.ValidateInput([]byte(`{}`)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func declaration(t *testing.T, name, version string, edit func(m map[string]any)) *Capability {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(configDir, "leak-check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["capability"]["name"], doc["capability"]["version"] = name, version
	if edit != nil {
		edit(doc["capability"])
	}
	data, _ = json.Marshal(doc)
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolve(t *testing.T) {
	var caps []*Capability
	for _, v := range []string{"1.0.0", "1.2.0", "1.10.1", "2.0.0", "2.1.0-beta.1", "3.0.0-rc.1"} {
		caps = append(caps, declaration(t, "x", v, nil))
	}
	r, err := NewRegistry(caps...)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rng, want string
		is        error
	}{
		{"", "2.0.0", nil}, // the highest release, not a pre-release
		{"1.x", "1.10.1", nil},
		{"1.2.x", "1.2.0", nil},
		{"^1.2", "1.10.1", nil},
		{"~1.2.0", "1.2.0", nil},
		{">=2.0.0", "2.0.0", nil},
		{">=2.1.0-0", "3.0.0-rc.1", nil},
		{"1.0.0", "1.0.0", nil},
		{"<1.0.0", "", ErrNoMatchingVersion},
		{"4.x", "", ErrNoMatchingVersion},
		{"one", "", ErrBadRange},
		{">>1", "", ErrBadRange},
	}
	for _, tt := range tests {
		t.Run(tt.rng, func(t *testing.T) {
			c, err := r.Resolve("x", tt.rng)
			if tt.is != nil {
				if !errors.Is(err, tt.is) {
					t.Fatalf("err = %v, want %v", err, tt.is)
				}
				return
			}
			if err != nil || c.SemVer.String() != tt.want {
				t.Fatalf("Resolve = %v %v, want %s", c.SemVer, err, tt.want)
			}
		})
	}
	if _, err := r.Resolve("y", "1.x"); !errors.Is(err, ErrUnknownCapability) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := NewRegistry(caps[0], declaration(t, "x", "1.0.0", nil)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestInvalidDeclarations(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(configDir, "cvd-material-synthesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(c map[string]any)
	}{
		{"missing description", func(c map[string]any) { delete(c, "description") }},
		{"missing safety", func(c map[string]any) { delete(c, "safety") }},
		{"unknown field", func(c map[string]any) { c["colour"] = "red" }},
		{"bad name", func(c map[string]any) { c["name"] = "CVD synthesis" }},
		{"version not semver", func(c map[string]any) { c["version"] = "1.0" }},
		{"version with v", func(c map[string]any) { c["version"] = "v1.0.0" }},
		{"risk R6", func(c map[string]any) { c["safety"].(map[string]any)["risk_ceiling"] = "R6" }},
		{"approval not bool", func(c map[string]any) { c["safety"].(map[string]any)["requires_human_approval"] = "yes" }},
		{"duration in months", func(c map[string]any) { c["constraints"].(map[string]any)["max_duration"] = "P1M" }},
		{"empty duration", func(c map[string]any) { c["constraints"].(map[string]any)["max_duration"] = "PT" }},
		{"duration too long", func(c map[string]any) { c["constraints"].(map[string]any)["max_duration"] = "P400D" }},
		{"concurrent 0", func(c map[string]any) { c["constraints"].(map[string]any)["concurrent_limit"] = 0 }},
		{"budgets unknown key", func(c map[string]any) { c["budgets"] = map[string]any{"gas_litres": 1} }},
		{"budgets negative gas", func(c map[string]any) {
			c["budgets"] = map[string]any{"gas_volume_scc": map[string]any{"H2S": -1}}
		}},
		{"budgets gas not a number", func(c map[string]any) {
			c["budgets"] = map[string]any{"gas_volume_scc": map[string]any{"H2S": "lots"}}
		}},
		{"budgets empty gas name", func(c map[string]any) {
			c["budgets"] = map[string]any{"gas_volume_scc": map[string]any{"": 1}}
		}},
		{"budgets zero energy", func(c map[string]any) { c["budgets"] = map[string]any{"heater_full_power_s": 0} }},
		{"budgets fractional actions", func(c map[string]any) { c["budgets"] = map[string]any{"max_actions": 2.5} }},
		{"budgets zero actions", func(c map[string]any) { c["budgets"] = map[string]any{"max_actions": 0} }},
		{"input schema not object", func(c map[string]any) { c["input_schema"] = map[string]any{"type": "array"} }},
		{"input schema broken", func(c map[string]any) {
			c["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"minimum": "zero"}}}
		}},
		{"remote ref", func(c map[string]any) {
			c["output_schema"] = map[string]any{"type": "object", "$ref": "https://example.com/schema.json"}
		}},
		{"file ref", func(c map[string]any) {
			c["output_schema"] = map[string]any{"type": "object", "$ref": "file:///etc/passwd"}
		}},
		{"bad regexp", func(c map[string]any) {
			c["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"pattern": "(?=x)"}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]map[string]any
			if err := json.Unmarshal(base, &doc); err != nil {
				t.Fatal(err)
			}
			tt.edit(doc["capability"])
			data, _ := json.Marshal(doc)
			if _, err := Parse(data); !errors.Is(err, ErrInvalidDeclaration) {
				t.Fatalf("Parse = %v, want ErrInvalidDeclaration", err)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"capability": null}`, `{"capability":{}} `, `{"other":{}}`} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrInvalidDeclaration) {
			t.Errorf("Parse(%q) = %v", bad, err)
		}
	}
}

func TestLoadDirReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"a.json": `{}`, "b.json": `not json`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "b.json") {
		t.Fatalf("LoadDir = %v", err)
	}
	if _, err := LoadDir(t.TempDir()); err == nil {
		t.Fatal("empty dir accepted")
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"PT72H", 72 * time.Hour, true},
		{"P1DT30M", 24*time.Hour + 30*time.Minute, true},
		{"PT0.5S", 500 * time.Millisecond, true},
		{"P3D", 72 * time.Hour, true},
		{"PT1H2M3S", time.Hour + 2*time.Minute + 3*time.Second, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"P1DT", 0, false},
		{"P1Y", 0, false},
		{"P1M", 0, false},
		{"P1W", 0, false},
		{"PT-1H", 0, false},
		{"pt1h", 0, false},
		{"PT1H ", 0, false},
		{"P367D", 0, false},
		{"PT99999999999999999999H", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"PT72H", "P1DT30M", "PT0.5S", "P", "PT", "P1Y", "PT1e9S", "P999999999999D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && (d < 0 || d > maxDuration) {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
	})
}

func FuzzValidateInput(f *testing.F) {
	r, err := LoadDir(configDir)
	if err != nil {
		f.Fatal(err)
	}
	c, _ := r.Resolve("cvd-material-synthesis", "1.x")
	for _, s := range []string{seedInputs, `{}`, `[]`, `null`, `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":1e400}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		err := c.ValidateInput(in)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || len(ie.Violations) == 0 {
				t.Fatalf("error %v is not an *InputError with violations", err)
			}
			return
		}
		// accepted: it must be an object with the required fields
		var m map[string]any
		if json.Unmarshal(in, &m) != nil || m["target_material"] == nil || m["substrate"] == nil {
			t.Fatalf("accepted %q", in)
		}
	})
}

func TestShippedBudgets(t *testing.T) {
	r := loadConfigs(t)
	cvd, _ := r.Resolve("cvd-material-synthesis", "1.x")
	lc, _ := r.Resolve("leak-check", "1.x")
	rs, _ := r.Resolve("rig-status", "1.x")
	if b := cvd.Budgets; b == nil || b.GasVolume["H2S"] <= 0 || b.HeaterFullPower == nil || b.MaxActions == nil {
		t.Fatalf("cvd budgets %+v", cvd.Budgets)
	}
	// A leak check opens no reactive gas: its budget for them is far below the synthesis's.
	if b := lc.Budgets; b == nil || b.GasVolume["H2S"] >= cvd.Budgets.GasVolume["H2S"] || b.MaxActions == nil {
		t.Fatalf("leak-check budgets %+v", lc.Budgets)
	}
	if rs.Budgets != nil {
		t.Fatalf("rig-status budgets %+v", rs.Budgets)
	}
}
