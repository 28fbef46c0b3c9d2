package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"hcp-edge/device/rig"
)

// Names of the rig's built-in tools.
const (
	ToolSetSetpoint = "furnace.set_setpoint"
	ToolSetRampRate = "furnace.set_ramp_rate"
	ToolSetHeater   = "furnace.set_heater"
	ToolSetValve    = "valve.set"
	ToolSetGate     = "gate_valve.set"
	ToolSetFlow     = "gas.set_flow"
	ToolSetPump     = "pump.set"
	ToolSetScrubber = "scrubber.set"
	ToolVent        = "chamber.vent"
	ToolAcquire     = "spectrometer.acquire"
	ToolSnapshot    = "rig.read_snapshot"
)

// BuiltinVersion is the version of every built-in tool.
const BuiltinVersion = "1.0.0"

// Lines are the rig's gases and gas line valves, as the input schemas of
// the gas tools enumerate them: the layout's (envelope.RigSpec.Lines). The
// gate valve has its own tool (ToolSetGate, rig.operate): it moves no gas.
type Lines struct {
	Gases  []string
	Valves []string
}

// writeOutput is the output of every actuator tool: what was asked and what
// the instrument reads back.
const writeOutput = `{
  "type": "object",
  "required": ["channel", "requested", "read_back", "unit", "at"],
  "properties": {
    "channel":   {"type": "string", "minLength": 1},
    "requested": {"type": ["number", "boolean"]},
    "read_back": {"type": ["number", "boolean"]},
    "unit":      {"type": "string"},
    "at":        {"type": "string", "format": "date-time"}
  },
  "additionalProperties": false
}`

func boolInput(field, doc string) string {
	return fmt.Sprintf(`{
  "type": "object",
  "required": [%q],
  "properties": {%q: {"type": "boolean", "description": %q}},
  "additionalProperties": false
}`, field, field, doc)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called on literals of this file
	}
	return string(b)
}

// Builtin returns the catalog of the reference rig of today's
// configuration shape (Generate of a layout with one zone named furnace, a
// pump, a gate valve, a vent valve, an exhaust scrubber, the gas lines of
// lines with their valves and a spectrometer), for code and tests that have
// no layout; the agent generates its catalog from the rig's (Generate).
// Every actuator tool is Dangerous: the interlock checks it against the
// safety envelope before anything reaches an instrument. raman.analyze
// (ToolAnalyze) is a compute tool: the Invoker runs the handler registered
// for it and never the interlock.
//
// materials are the materials the analysis has a model for (the agent
// hands down session/analysis.MaterialNames): raman.analyze's schemas
// enumerate them, so that no material is named in this package. Without
// them raman.analyze takes any short material name and the analysis refuses
// one it does not know.
func Builtin(lines Lines, materials ...string) (*Registry, error) {
	return Generate(referenceLayout(lines), materials...)
}

// act is the safety of an actuator tool: Dangerous, reversible,
// idempotent, at most 60 calls a minute.
func act(perm Permission, risk RiskLevel, effects ...string) Safety {
	return Safety{Permission: perm, RiskLevel: risk, Dangerous: true, SideEffects: effects,
		Reversible: true, Idempotent: true, RateLimit: RateLimit{MaxCalls: 60, Per: time.Minute}}
}

// An actuator tool's timeout bounds the whole of the interlock's apply:
// waiting for the apply in progress, the snapshot of every instrument (1 s
// each, concurrently), the write and its read-back (2 s).
const actTimeout = 5 * time.Second

func perf(typical, timeout time.Duration) Performance {
	return Performance{TypicalLatency: typical, Timeout: timeout}
}

// zoneTools are the tools of one heated zone: its setpoint, ramp rate and
// heater, named ZoneTool(zone, op). The zone named furnace (rig.FurnaceName,
// the one zone of today's configuration shape) has the tools, texts and ids
// it always had; another zone's ids are derived from the tool's name
// (toolID) and its texts name the zone.
func zoneTools(zone string) []Tool {
	the, caps := "the furnace", []string{"furnace"}
	if zone != rig.FurnaceName {
		the, caps = "zone "+zone+"'s", []string{"furnace", "zone"}
	}
	tool := func(op, desc string, tags []string, input string, risk RiskLevel, effect string) Tool {
		name := ZoneTool(zone, op)
		return Tool{ID: toolID(name), Name: name, Version: BuiltinVersion, Description: desc,
			Category: "actuation", Capabilities: append(slices.Clip(caps), tags...),
			InputSchema: json.RawMessage(input), OutputSchema: json.RawMessage(writeOutput),
			Safety: act(PermissionOperate, risk, effect), Performance: perf(50*time.Millisecond, actTimeout)}
	}
	return []Tool{
		tool(OpSetSetpoint, "Set "+the+" temperature setpoint; the controller ramps towards it at the ramp rate.",
			[]string{"temperature_control", "actuate"}, `{
  "type": "object",
  "required": ["setpoint", "unit"],
  "properties": {
    "setpoint": {"type": "number"},
    "unit":     {"enum": ["celsius", "kelvin"]}
  },
  "additionalProperties": false
}`, R3, "furnace_temperature"),
		tool(OpSetRampRate, "Set "+the+" ramp rate (0 means an unlimited step, which the envelope normally forbids).",
			[]string{"temperature_control", "actuate"}, `{
  "type": "object",
  "required": ["rate", "unit"],
  "properties": {
    "rate": {"type": "number", "minimum": 0},
    "unit": {"enum": ["celsius_per_minute", "kelvin_per_minute"]}
  },
  "additionalProperties": false
}`, R2, "furnace_ramp"),
		tool(OpSetHeater, "Enable or disable "+the+" heater output.",
			[]string{"heater", "actuate"}, boolInput("on", "true enables the heater output"), R3, "furnace_heating"),
	}
}

// rigTools are the tools of today's configuration shape other than the
// zone's, by name: Generate takes those the layout has.
func rigTools(lines Lines, materials []string) []Tool {
	return []Tool{
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000004", Name: ToolSetValve, Version: BuiltinVersion,
			Description: "Open or close a process gas line valve.",
			Category:    "actuation", Capabilities: []string{"valve", "gas_handling", "actuate"},
			InputSchema: json.RawMessage(`{
  "type": "object",
  "required": ["valve", "open"],
  "properties": {
    "valve": {"enum": ` + mustJSON(lines.Valves) + `},
    "open":  {"type": "boolean"}
  },
  "additionalProperties": false
}`),
			OutputSchema: json.RawMessage(writeOutput),
			Safety:       act(PermissionGas, R3, "gas_line", "chamber_atmosphere"),
			Performance:  perf(30*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-00000000000b", Name: ToolSetGate, Version: BuiltinVersion,
			Description: "Open or close the gate valve between the chamber and the pump.",
			Category:    "actuation", Capabilities: []string{"valve", "vacuum", "actuate"},
			InputSchema:  json.RawMessage(boolInput("open", "true opens the gate valve")),
			OutputSchema: json.RawMessage(writeOutput),
			Safety:       act(PermissionOperate, R2, "chamber_pressure"),
			Performance:  perf(30*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000005", Name: ToolSetFlow, Version: BuiltinVersion,
			Description: "Set the mass-flow setpoint of a process gas.",
			Category:    "actuation", Capabilities: []string{"gas_flow", "gas_handling", "actuate"},
			InputSchema: json.RawMessage(`{
  "type": "object",
  "required": ["gas", "flow", "unit"],
  "properties": {
    "gas":  {"enum": ` + mustJSON(lines.Gases) + `},
    "flow": {"type": "number", "minimum": 0},
    "unit": {"enum": ["sccm", "slm"]}
  },
  "additionalProperties": false
}`),
			OutputSchema: json.RawMessage(writeOutput),
			Safety:       act(PermissionGas, R4, "gas_flow", "chamber_atmosphere"),
			Performance:  perf(40*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000006", Name: ToolSetPump, Version: BuiltinVersion,
			Description: "Start or stop the roughing pump.",
			Category:    "actuation", Capabilities: []string{"roughing_pump", "vacuum", "actuate"},
			InputSchema:  json.RawMessage(boolInput("on", "true starts the pump")),
			OutputSchema: json.RawMessage(writeOutput),
			Safety:       act(PermissionOperate, R2, "chamber_pressure"),
			Performance:  perf(30*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000007", Name: ToolSetScrubber, Version: BuiltinVersion,
			Description: "Switch the exhaust scrubber on or off.",
			Category:    "actuation", Capabilities: []string{"exhaust", "actuate"},
			InputSchema:  json.RawMessage(boolInput("on", "true switches the scrubber on")),
			OutputSchema: json.RawMessage(writeOutput),
			Safety:       act(PermissionOperate, R2, "exhaust"),
			Performance:  perf(30*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000008", Name: ToolVent, Version: BuiltinVersion,
			Description: "Open or close the vent valve, admitting air to the chamber.",
			Category:    "actuation", Capabilities: []string{"vent", "vacuum", "actuate"},
			InputSchema:  json.RawMessage(boolInput("open", "true opens the vent valve")),
			OutputSchema: json.RawMessage(writeOutput),
			Safety: Safety{Permission: PermissionOperate, RiskLevel: R3, Dangerous: true,
				SideEffects: []string{"chamber_atmosphere"}, Reversible: false, Idempotent: true,
				RateLimit: RateLimit{MaxCalls: 10, Per: time.Minute}},
			Performance: perf(30*time.Millisecond, actTimeout),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-000000000009", Name: ToolAcquire, Version: BuiltinVersion,
			Description: "Acquire a Raman spectrum of the sample (532 nm laser on during the integration).",
			Category:    "measurement", Capabilities: []string{"raman", "spectrum", "measure"},
			InputSchema: json.RawMessage(`{
  "type": "object",
  "required": ["integration_ms"],
  "properties": {"integration_ms": {"type": "integer", "minimum": 10, "maximum": 60000}},
  "additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
  "type": "object",
  "required": ["shift", "counts", "integration_ms", "at"],
  "properties": {
    "shift":          {"type": "array", "items": {"type": "number"}, "minItems": 1},
    "counts":         {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 1},
    "integration_ms": {"type": "integer", "minimum": 1},
    "at":             {"type": "string", "format": "date-time"}
  },
  "additionalProperties": false
}`),
			Safety: Safety{Permission: PermissionMeasure, RiskLevel: R1, Dangerous: true,
				SideEffects: []string{"laser"}, Reversible: true, Idempotent: true,
				RateLimit: RateLimit{MaxCalls: 30, Per: time.Minute}},
			Performance: perf(2*time.Second, 70*time.Second),
		},
		{
			ID: "6b1f0c3e-5a0e-4c1d-9a11-00000000000a", Name: ToolSnapshot, Version: BuiltinVersion,
			Description: "Read one consistent snapshot of every instrument, with units and timestamps.",
			Category:    "observation", Capabilities: []string{"snapshot", "observe", "read"},
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false}`),
			OutputSchema: json.RawMessage(`{
  "type": "object",
  "required": ["at", "furnace", "pressure", "flows", "switches", "inputs"],
  "properties": {
    "at": {"type": "string", "format": "date-time"},
    "furnace": {
      "type": "object",
      "required": ["temperature_c", "setpoint_c", "heater_enabled", "at"],
      "properties": {
        "temperature_c":       {"type": "number"},
        "setpoint_c":          {"type": "number"},
        "working_setpoint_c":  {"type": "number"},
        "ramp_rate_c_per_min": {"type": "number", "minimum": 0},
        "output_percent":      {"type": "number", "minimum": 0, "maximum": 100},
        "heater_enabled":      {"type": "boolean"},
        "alarms":              {"type": "array", "items": {"type": "string"}},
        "at":                  {"type": "string", "format": "date-time"}
      }
    },
    "pressure": {
      "type": "object",
      "required": ["pascal", "status", "at"],
      "properties": {
        "pascal": {"type": "number", "minimum": 0},
        "status": {"type": "string"},
        "at":     {"type": "string", "format": "date-time"}
      }
    },
    "flows": {
      "type": "object",
      "additionalProperties": {
        "type": "object",
        "required": ["flow_sccm", "setpoint_sccm", "at"],
        "properties": {
          "flow_sccm":     {"type": "number"},
          "setpoint_sccm": {"type": "number", "minimum": 0},
          "at":            {"type": "string", "format": "date-time"}
        }
      }
    },
    "switches": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "inputs":   {"type": "object", "additionalProperties": {"type": "boolean"}}
  }
}`),
			Safety: Safety{Permission: PermissionRead, RiskLevel: R1, Dangerous: false,
				SideEffects: []string{}, Reversible: true, Idempotent: true},
			Performance: perf(100*time.Millisecond, 3*time.Second),
		},
		analyzeTool(materials),
	}
}
