package envelope

import (
	"time"

	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
)

// Channel names. A writable channel is something an Action sets; the
// read-only ones carry trip thresholds. The furnace.* channels are those of
// the heated zone named furnace (rig.FurnaceName, the one zone of the
// one-entry configuration shape): ZoneChannel("furnace", ZoneSetpoint) is
// ChannelSetpoint, and so on; another zone's are ZoneChannel(zone, ...).
const (
	ChannelSetpoint    = "furnace.setpoint"         // temperature, writable
	ChannelRampRate    = "furnace.ramp_rate"        // temperature rate, writable
	ChannelHeater      = "furnace.heater"           // on/off, writable
	ChannelIntegration = "spectrometer.integration" // duration of an acquisition, writable
	ChannelTemperature = "furnace.temperature"      // process value, read-only (over_temperature)
	ChannelPressure    = "chamber.pressure"         // gauge, read-only (over_pressure)
)

// The quantities of a heated zone, the second part of its channels' names
// (ZoneChannel).
const (
	ZoneSetpoint    = "setpoint"    // temperature, writable
	ZoneRampRate    = "ramp_rate"   // temperature rate, writable
	ZoneHeater      = "heater"      // on/off, writable
	ZoneTemperature = "temperature" // process value, read-only (the zone's over_temperature)
)

// ZoneChannel is the channel of a heated zone's quantity (ZoneSetpoint,
// ZoneRampRate, ZoneHeater, ZoneTemperature): "<zone>.<what>".
func ZoneChannel(zone, what string) string { return zone + "." + what }

// FlowChannel is the writable channel of a gas's mass-flow setpoint.
func FlowChannel(gas string) string { return "flow." + gas }

// SwitchChannel is the writable channel of an on/off output.
func SwitchChannel(name string) string { return "switch." + name }

// RigSpec declares what the rig's instruments can do: ranges, gases, outputs
// and inputs. Compile refuses an envelope whose limits lie outside these
// ranges or that leaves a writable channel unbounded; NewInterlock checks the
// Rig against it.
type RigSpec struct {
	// Furnace is the range of the rig's first heated zone (Zones[0]'s when
	// Zones is set: SpecOf sets both, and Compile refuses them apart).
	Furnace FurnaceSpec
	// Zones are the rig's heated zones in the layout's order, each with its
	// controller's range and its channels (ZoneChannel). Empty: the one
	// zone named furnace, of range Furnace (the furnace.* channels). SpecOf
	// leaves it empty for a rig whose only zone is named furnace.
	Zones        []ZoneSpec `json:",omitempty"`
	Gauge        GaugeSpec
	Gases        []GasSpec
	Switches     []SwitchSpec
	Inputs       []string
	Spectrometer *SpectrometerSpec // nil: no spectrometer
	// Roles names the outputs (and the input) that the rules and the
	// recipes' phases drive by what they do; the layout gives them.
	Roles Roles
	// Wires says where each writable channel lands (register, coil, serial
	// command), for the coverage report.
	Wires map[string]string
	// Internal lists writes that drivers make on their own (watchdog kick,
	// gauge unit selection, ...), never reachable through an Action.
	Internal []InternalWrite
}

// FurnaceSpec is the controller's range.
type FurnaceSpec struct {
	SetpointMin, SetpointMax device.Temperature
	RampMax                  device.TemperatureRate
	ProcessValueMax          device.Temperature // the highest temperature it can measure
}

// ZoneSpec is one heated zone: its name (its channels' first part) and its
// controller's range.
type ZoneSpec struct {
	Name string
	FurnaceSpec
}

// ZoneList returns the rig's heated zones: Zones, or the one zone named
// furnace of range Furnace when Zones is empty.
//
//go:noinline
func (s RigSpec) ZoneList() []ZoneSpec {
	if len(s.Zones) == 0 {
		return []ZoneSpec{{Name: rig.FurnaceName, FurnaceSpec: s.Furnace}}
	}
	return s.Zones
}

// zoneRange is the range of the zone named name (ZoneList's, without
// making it: Check asks at every action).
//
//go:noinline
func (s RigSpec) zoneRange(name string) (FurnaceSpec, bool) {
	if len(s.Zones) == 0 {
		return s.Furnace, name == rig.FurnaceName
	}
	for _, z := range s.Zones {
		if z.Name == name {
			return z.FurnaceSpec, true
		}
	}
	return FurnaceSpec{}, false
}

// ZoneNames returns the names of the rig's heated zones, in ZoneList's order.
func (s RigSpec) ZoneNames() []string {
	zs := s.ZoneList()
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i] = z.Name
	}
	return out
}

// GaugeSpec is the vacuum gauge's measuring range.
type GaugeSpec struct{ Min, Max device.Pressure }

// GasSpec is one gas line: its mass-flow controller and its line valve.
type GasSpec struct {
	Gas       string      // the gas's formula; the FlowControllers key of the Rig
	FullScale device.Flow // the controller's range
	Valve     string      // the Switch that opens the line
	// Hazard is the gas's hazard class (the layout's, device/rig).
	Hazard rig.Hazard
}

// Roles are the outputs (and the input) the rules and the recipes' phases
// drive by what they do. An empty role is one the rig does not have.
type Roles struct {
	Pump     string // the roughing pump
	Gate     string // the gate valve between chamber and pump
	Vent     string // the vent valve (admits air)
	Scrubber string // the exhaust scrubber
	Door     string // input: the door is closed
}

// Lines are the rig's gases and line valves, in the layout's order, for
// the gas tools' input schemas.
func (s RigSpec) Lines() catalog.Lines {
	var l catalog.Lines
	for _, g := range s.Gases {
		l.Gases = append(l.Gases, g.Gas)
		l.Valves = append(l.Valves, g.Valve)
	}
	return l
}

// Hazard returns the hazard class of gas ("" when the rig has no such line).
func (s RigSpec) Hazard(gas string) rig.Hazard {
	for _, g := range s.Gases {
		if g.Gas == gas {
			return g.Hazard
		}
	}
	return ""
}

// SwitchSpec is an on/off output.
type SwitchSpec struct {
	Name      string
	SafeState bool // the level Halt drives it to
	// InterlockOwned outputs (the interlock relay) are driven only by the
	// Interlock's Arm and Halt paths, never by an Action.
	InterlockOwned bool
}

// SpectrometerSpec is the spectrometer's integration range.
type SpectrometerSpec struct{ MinIntegration, MaxIntegration time.Duration }

// InternalWrite is a write drivers make by themselves.
type InternalWrite struct{ Channel, Wire, Reason string }
