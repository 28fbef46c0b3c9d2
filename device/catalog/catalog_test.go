package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func validTool() Tool {
	return Tool{
		ID: "00000000-0000-4000-8000-000000000001", Name: "test.echo", Version: "1.0.0",
		Description: "echo", Category: "test", Capabilities: []string{"echo"},
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`),
		Safety:       Safety{Permission: PermissionRead, RiskLevel: R1},
		Performance:  Performance{TypicalLatency: time.Millisecond, Timeout: time.Second},
	}
}

func TestBuiltinCatalog(t *testing.T) {
	r, err := Builtin(simLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ToolVent, ToolSetHeater, ToolSetRampRate, ToolSetSetpoint, ToolSetFlow,
		ToolSetGate, ToolSetPump, ToolAnalyze, ToolSnapshot, ToolSetScrubber, ToolAcquire, ToolSetValve}
	var got []string
	for _, tl := range r.List() {
		got = append(got, tl.Name)
		if !tl.Compiled() {
			t.Errorf("%s: listed tool not compiled", tl.Ref())
		}
		if tl.Name != ToolSnapshot && !tl.Compute() && !tl.Safety.Dangerous {
			t.Errorf("%s: an actuator or measurement tool must be dangerous", tl.Ref())
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List order:\n got %v\nwant %v", got, want)
	}
}

func TestBuiltinInputs(t *testing.T) {
	r, err := Builtin(simLines)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input string
		ok                bool
	}{
		{"setpoint celsius", ToolSetSetpoint, `{"setpoint": 700, "unit": "celsius"}`, true},
		{"setpoint kelvin", ToolSetSetpoint, `{"setpoint": 973.15, "unit": "kelvin"}`, true},
		{"setpoint fahrenheit", ToolSetSetpoint, `{"setpoint": 700, "unit": "fahrenheit"}`, false},
		{"setpoint no unit", ToolSetSetpoint, `{"setpoint": 700}`, false},
		{"setpoint as string", ToolSetSetpoint, `{"setpoint": "700", "unit": "celsius"}`, false},
		{"setpoint extra field", ToolSetSetpoint, `{"setpoint": 700, "unit": "celsius", "force": true}`, false},
		{"ramp", ToolSetRampRate, `{"rate": 10, "unit": "celsius_per_minute"}`, true},
		{"ramp negative", ToolSetRampRate, `{"rate": -1, "unit": "celsius_per_minute"}`, false},
		{"heater on", ToolSetHeater, `{"on": true}`, true},
		{"heater as number", ToolSetHeater, `{"on": 1}`, false},
		{"valve h2s", ToolSetValve, `{"valve": "h2s_valve", "open": true}`, true},
		{"valve relay", ToolSetValve, `{"valve": "relay", "open": true}`, false},
		{"valve vent is its own tool", ToolSetValve, `{"valve": "vent_valve", "open": true}`, false},
		{"flow slm", ToolSetFlow, `{"gas": "Ar", "flow": 0.2, "unit": "slm"}`, true},
		{"flow unknown gas", ToolSetFlow, `{"gas": "Cl2", "flow": 1, "unit": "sccm"}`, false},
		{"flow negative", ToolSetFlow, `{"gas": "H2", "flow": -1, "unit": "sccm"}`, false},
		{"pump", ToolSetPump, `{"on": false}`, true},
		{"scrubber", ToolSetScrubber, `{"on": true}`, true},
		{"vent", ToolVent, `{"open": true}`, true},
		{"acquire", ToolAcquire, `{"integration_ms": 1000}`, true},
		{"acquire too short", ToolAcquire, `{"integration_ms": 5}`, false},
		{"acquire fractional", ToolAcquire, `{"integration_ms": 10.5}`, false},
		{"snapshot", ToolSnapshot, `{}`, true},
		{"snapshot with args", ToolSnapshot, `{"x": 1}`, false},
		{"not json", ToolSnapshot, `{`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := r.Describe(tt.tool, BuiltinVersion)
			if err != nil {
				t.Fatal(err)
			}
			err = tl.ValidateInputJSON([]byte(tt.input))
			if tt.ok && err != nil {
				t.Fatalf("want valid, got %v", err)
			}
			if !tt.ok {
				var ve *ValidationError
				if !errors.Is(err, ErrInvalidInput) || !errors.As(err, &ve) || ve.Name != tt.tool {
					t.Fatalf("want *ValidationError wrapping ErrInvalidInput, got %v", err)
				}
			}
		})
	}
}

func TestBuiltinOutputs(t *testing.T) {
	r, err := Builtin(simLines)
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := r.Describe(ToolSetSetpoint, BuiltinVersion)
	good := map[string]any{"channel": "furnace.setpoint", "requested": 700.0, "read_back": 700.0,
		"unit": "celsius", "at": "2026-11-21T10:00:00Z"}
	if err := tl.ValidateOutput(good); err != nil {
		t.Fatal(err)
	}
	bad := map[string]any{"channel": "furnace.setpoint", "requested": 700.0, "read_back": 700.0,
		"unit": "celsius", "at": "yesterday"}
	if err := tl.ValidateOutput(bad); !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("date-time format not asserted: %v", err)
	}
	var uncompiled Tool
	if err := uncompiled.ValidateInput(map[string]any{}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("uncompiled tool: %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Tool)
		want   error
		field  string
	}{
		{"bad name", func(t *Tool) { t.Name = "Echo" }, ErrInvalidTool, "name"},
		{"empty name part", func(t *Tool) { t.Name = "a..b" }, ErrInvalidTool, "name"},
		{"bad version", func(t *Tool) { t.Version = "1.0" }, ErrInvalidTool, "version"},
		{"leading zero", func(t *Tool) { t.Version = "01.0.0" }, ErrInvalidTool, "version"},
		{"v prefix", func(t *Tool) { t.Version = "v1.0.0" }, ErrInvalidTool, "version"},
		{"bad id", func(t *Tool) { t.ID = "tool-1" }, ErrInvalidTool, "tool_id"},
		{"no description", func(t *Tool) { t.Description = " " }, ErrInvalidTool, "description"},
		{"no capability", func(t *Tool) { t.Capabilities = nil }, ErrInvalidTool, "capabilities"},
		{"bad capability", func(t *Tool) { t.Capabilities = []string{"Read File"} }, ErrInvalidTool, "capabilities"},
		{"unknown permission", func(t *Tool) { t.Safety.Permission = "root" }, ErrInvalidTool, "safety.permission_required"},
		{"bad risk", func(t *Tool) { t.Safety.RiskLevel = "R9" }, ErrInvalidTool, "safety.risk_level"},
		{"rate limit without window", func(t *Tool) { t.Safety.RateLimit = RateLimit{MaxCalls: 3} }, ErrInvalidTool, "safety.rate_limit"},
		{"no timeout", func(t *Tool) { t.Performance.Timeout = 0 }, ErrInvalidTool, "performance.timeout"},
		{"latency beyond timeout", func(t *Tool) { t.Performance.TypicalLatency = time.Hour }, ErrInvalidTool, "performance.typical_latency"},
		{"schema missing", func(t *Tool) { t.InputSchema = nil }, ErrInvalidSchema, "input_schema"},
		{"schema not json", func(t *Tool) { t.InputSchema = json.RawMessage(`{"type":`) }, ErrInvalidSchema, "input_schema"},
		{"schema not an object schema", func(t *Tool) { t.InputSchema = json.RawMessage(`{"type":"number"}`) }, ErrInvalidSchema, "input_schema"},
		{"schema keyword wrong type", func(t *Tool) {
			t.OutputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"minimum":"zero"}}}`)
		}, ErrInvalidSchema, "output_schema"},
		{"schema bad regex", func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"pattern":"("}}}`)
		}, ErrInvalidSchema, "input_schema"},
		{"schema external ref", func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}`)
		}, ErrInvalidSchema, "input_schema"},
		{"schema file ref", func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`)
		}, ErrInvalidSchema, "input_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			tl := validTool()
			tt.mutate(&tl)
			err := r.Register(tl)
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
			var ie *InvalidToolError
			var se *SchemaError
			switch {
			case errors.As(err, &ie):
				if ie.Field != tt.field {
					t.Errorf("field %q, want %q", ie.Field, tt.field)
				}
			case errors.As(err, &se):
				if se.Which != tt.field {
					t.Errorf("which %q, want %q", se.Which, tt.field)
				}
			default:
				t.Fatalf("untyped error %T %v", err, err)
			}
			if r.Len() != 0 {
				t.Fatal("a refused tool was registered")
			}
		})
	}
}

func TestRegisterDuplicates(t *testing.T) {
	r := NewRegistry()
	if err := r.Register(validTool()); err != nil {
		t.Fatal(err)
	}
	var de *DuplicateError
	err := r.Register(validTool())
	if !errors.Is(err, ErrDuplicate) || !errors.As(err, &de) || de.ID != "" || de.Name != "test.echo" {
		t.Fatalf("same (name, version): %v", err)
	}
	other := validTool()
	other.Name = "test.other"
	err = r.Register(other)
	if !errors.As(err, &de) || de.ID != other.ID {
		t.Fatalf("same id: %v", err)
	}
	next := validTool()
	next.ID = "00000000-0000-4000-8000-000000000002"
	next.Version = "1.1.0"
	if err := r.Register(next); err != nil {
		t.Fatalf("a second version must register: %v", err)
	}
	if r.Len() != 2 {
		t.Fatalf("len %d", r.Len())
	}
}

func TestDescribeAndVersions(t *testing.T) {
	r := NewRegistry()
	for i, v := range []string{"1.10.0", "1.2.0", "2.0.0-rc.1", "1.9.9"} {
		tl := validTool()
		tl.Version = v
		tl.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tl := range r.List() {
		got = append(got, tl.Version)
	}
	if want := []string{"1.2.0", "1.9.9", "1.10.0", "2.0.0-rc.1"}; !slices.Equal(got, want) {
		t.Fatalf("versions %v, want %v", got, want)
	}
	latest, err := r.Describe("test.echo", "")
	if err != nil || latest.Version != "2.0.0-rc.1" {
		t.Fatalf("latest: %v %v", latest.Version, err)
	}
	exact, err := r.Describe("test.echo", "1.9.9")
	if err != nil || exact.Version != "1.9.9" {
		t.Fatalf("exact: %v %v", exact.Version, err)
	}
	if _, err := r.Describe("test.echo", "3.0.0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}
	if _, err := r.Describe("nope", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing name: %v", err)
	}
	byID, err := r.ByID("00000000-0000-4000-8000-000000000003")
	if err != nil || byID.Version != "1.9.9" {
		t.Fatalf("ByID: %v %v", byID.Version, err)
	}
	if _, err := r.ByID("00000000-0000-4000-8000-999999999999"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByID missing: %v", err)
	}
}

func TestLookup(t *testing.T) {
	r, err := Builtin(simLines)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tags []string
		want []string
	}{
		{"furnace", []string{"furnace"}, []string{ToolSetHeater, ToolSetRampRate, ToolSetSetpoint}},
		{"vacuum", []string{"vacuum"}, []string{ToolVent, ToolSetGate, ToolSetPump}},
		{"two tags", []string{"furnace", "heater"}, []string{ToolSetHeater}},
		{"measure", []string{"measure"}, []string{ToolAcquire}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Lookup(tt.tags...)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range got {
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Fatalf("got %v, want %v", names, tt.want)
			}
		})
	}
	if _, err := r.Lookup("teleport"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	if _, err := r.Lookup(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no tag: %v", err)
	}
}

func TestReturnedToolsAreCopies(t *testing.T) {
	r, _ := Builtin(simLines)
	tl, _ := r.Describe(ToolSetFlow, BuiltinVersion)
	tl.Capabilities[0] = "hacked"
	tl.InputSchema[0] = 'X'
	again, _ := r.Describe(ToolSetFlow, BuiltinVersion)
	if again.Capabilities[0] == "hacked" || again.InputSchema[0] == 'X' {
		t.Fatal("a caller mutated the registry through a returned tool")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r, _ := Builtin(simLines)
	r2 := NewRegistry()
	for _, tl := range r.List() {
		data, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		var back Tool
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v\n%s", tl.Ref(), err, data)
		}
		if back.Compiled() {
			t.Fatal("a decoded tool must not claim compiled schemas")
		}
		if back.Performance != tl.Performance || back.Safety.RateLimit != tl.Safety.RateLimit ||
			back.Safety.Permission != tl.Safety.Permission || back.ID != tl.ID {
			t.Fatalf("%s: round trip changed metadata: %+v vs %+v", tl.Ref(), back, tl)
		}
		if err := r2.Register(back); err != nil {
			t.Fatalf("%s: re-register: %v", tl.Ref(), err)
		}
	}
	var m map[string]any
	data, _ := json.Marshal(r.List()[0])
	_ = json.Unmarshal(data, &m)
	for _, k := range []string{"tool_id", "name", "version", "capabilities", "input_schema", "output_schema", "safety", "performance"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON form lacks %q", k)
		}
	}
	var bad Tool
	if err := json.Unmarshal([]byte(`{"name":"x","surprise":1}`), &bad); err == nil {
		t.Fatal("unknown field accepted")
	}
}

func TestConcurrentUse(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tl := validTool()
			tl.Version = fmt.Sprintf("1.%d.0", i)
			tl.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			if err := r.Register(tl); err != nil {
				t.Error(err)
			}
			_ = r.List()
			_, _ = r.Lookup("echo")
		}()
	}
	wg.Wait()
	if r.Len() != 8 {
		t.Fatalf("len %d", r.Len())
	}
}

// simLines are configs/sim.yaml's gas lines.
var simLines = Lines{Gases: []string{"Ar", "H2", "H2S"}, Valves: []string{"ar_valve", "h2_valve", "h2s_valve"}}
