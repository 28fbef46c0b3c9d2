package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
)

// The operations of a heated zone's tools: ZoneTool(zone, op) is the tool's
// name. The zone named furnace has the names furnace.set_setpoint,
// furnace.set_ramp_rate and furnace.set_heater (ToolSetSetpoint,
// ToolSetRampRate, ToolSetHeater); a zone named growth has
// growth.set_setpoint, growth.set_ramp_rate and growth.set_heater.
const (
	OpSetSetpoint = "set_setpoint"
	OpSetRampRate = "set_ramp_rate"
	OpSetHeater   = "set_heater"
)

// ZoneTool is the name of a heated zone's tool of an operation (OpSetSetpoint,
// OpSetRampRate, OpSetHeater): the zone's name, a dot and the operation, as
// the envelope names the zone's channels by the zone (furnace.setpoint).
func ZoneTool(zone, op string) string { return zone + "." + op }

// ZoneOf is the zone and the operation of a zone tool's name (ZoneTool's
// inverse); ok is false for any other name.
func ZoneOf(name string) (zone, op string, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", "", false
	}
	switch op = name[i+1:]; op {
	case OpSetSetpoint, OpSetRampRate, OpSetHeater:
		return name[:i], op, true
	}
	return "", "", false
}

// SwitchTool is the name of the tool of an output that has no role and
// opens no gas line: switch.NAME.set, after the envelope's channel of the
// output (switch.NAME). An output of a role has the role's tool (RoleTool);
// a gas line's valve is one of valve.set's valves.
func SwitchTool(output string) string { return "switch." + output + ".set" }

// RoleTool is the tool of the output of a role (rig.RolePump: pump.set,
// rig.RoleGate: gate_valve.set, rig.RoleVent: chamber.vent,
// rig.RoleScrubber: scrubber.set); "" for another role.
func RoleTool(role string) string {
	switch role {
	case rig.RolePump:
		return ToolSetPump
	case rig.RoleGate:
		return ToolSetGate
	case rig.RoleVent:
		return ToolVent
	case rig.RoleScrubber:
		return ToolSetScrubber
	}
	return ""
}

// Generate returns the catalog of a rig's layout at BuiltinVersion: the
// tools of each heated zone (ZoneTool: setpoint, ramp rate, heater), the
// tool of each output (its role's tool, RoleTool; valve.set for the valves
// of the gas lines; SwitchTool for any other), gas.set_flow over the gas
// lines, spectrometer.acquire when the layout has a spectrometer, the
// read-only rig.read_snapshot and the compute tool raman.analyze
// (materials as for Builtin).
//
// A layout of today's configuration shape (one zone named furnace) has
// exactly the tools, names, ids and schemas the catalog always had, less
// the tool of a role the rig has no output for (a rig without a scrubber
// has no scrubber.set). A zone whose name makes no tool name (upper case,
// a hyphen) is an error naming it; an output of such a name that has no
// role and opens no line has no tool (as before the catalog was generated:
// the configuration does not constrain output names).
func Generate(l rig.Layout, materials ...string) (*Registry, error) {
	var lines Lines
	valve := map[string]bool{}
	for _, ln := range l.Lines {
		lines.Gases = append(lines.Gases, ln.Gas)
		lines.Valves = append(lines.Valves, ln.Valve)
		valve[ln.Valve] = true
	}
	rt := rigTools(lines, materials)
	named := func(name string) Tool {
		for _, t := range rt {
			if t.Name == name {
				return t
			}
		}
		return Tool{Name: name} // not reached: rigTools has every name asked for
	}
	var tools []Tool
	for _, z := range l.Zones {
		if !device.Word(z.Name) {
			return nil, fmt.Errorf("catalog: zone %q: a zone's name is a lower-case word (letters, digits, _) to name its tools", z.Name)
		}
		tools = append(tools, zoneTools(z.Name)...)
	}
	for _, o := range l.Outputs {
		switch {
		case RoleTool(o.Role) != "":
			tools = append(tools, named(RoleTool(o.Role)))
		case valve[o.Name]:
		case device.Word(o.Name):
			tools = append(tools, switchTool(o))
		}
	}
	if len(l.Lines) > 0 {
		tools = append(tools, named(ToolSetValve), named(ToolSetFlow))
	}
	if len(l.Of(rig.KindSpectrometer)) > 0 {
		tools = append(tools, named(ToolAcquire))
	}
	tools = append(tools, named(ToolSnapshot), named(ToolAnalyze))
	r := NewRegistry()
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// switchTool is the tool of an output that has no role and opens no gas
// line: on or off, through the interlock like every actuator.
func switchTool(o rig.Switch) Tool {
	name := SwitchTool(o.Name)
	return Tool{
		ID: toolID(name), Name: name, Version: BuiltinVersion,
		Description: "Switch output " + o.Name + " on or off.",
		Category:    "actuation", Capabilities: []string{"switch", "actuate"},
		InputSchema:  []byte(boolInput("on", "true switches the output on")),
		OutputSchema: []byte(writeOutput),
		Safety:       act(PermissionOperate, R3, "rig_output"),
		Performance:  perf(30*time.Millisecond, actTimeout),
	}
}

// toolID is a generated tool's id: the fixed one of a furnace zone tool
// (the ids those tools always had), else a name-based UUID (version 8,
// RFC 9562) from the SHA-256 of the name, the same on every rig and every
// start.
func toolID(name string) string {
	switch name {
	case ToolSetSetpoint:
		return "6b1f0c3e-5a0e-4c1d-9a11-000000000001"
	case ToolSetRampRate:
		return "6b1f0c3e-5a0e-4c1d-9a11-000000000002"
	case ToolSetHeater:
		return "6b1f0c3e-5a0e-4c1d-9a11-000000000003"
	}
	h := sha256.Sum256([]byte("hcp-edge tool " + name))
	h[6] = h[6]&0x0f | 0x80
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// referenceLayout is the layout Builtin generates from: one zone named
// furnace, the four role outputs, the gas lines of lines and a
// spectrometer. Each role's output is named by its role: a role output's
// tool is the role's (RoleTool), whatever the output's name.
func referenceLayout(lines Lines) rig.Layout {
	l := rig.Layout{
		Zones: []rig.Zone{{Name: rig.FurnaceName, Controller: rig.FurnaceName}},
		Outputs: []rig.Switch{
			{Name: rig.RoleGate, Role: rig.RoleGate}, {Name: rig.RolePump, Role: rig.RolePump},
			{Name: rig.RoleScrubber, Role: rig.RoleScrubber, Safe: true}, {Name: rig.RoleVent, Role: rig.RoleVent},
		},
		Instruments: []rig.Instrument{{Name: "raman", Kind: rig.KindSpectrometer}},
	}
	for i, g := range lines.Gases {
		v := ""
		if i < len(lines.Valves) {
			v = lines.Valves[i]
		}
		l.Lines = append(l.Lines, rig.Line{Gas: g, Valve: v})
		l.Outputs = append(l.Outputs, rig.Switch{Name: v})
	}
	return l
}
