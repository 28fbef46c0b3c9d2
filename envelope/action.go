package envelope

import (
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
)

// ActionKind says what an Action does.
type ActionKind int

// Action kinds.
const (
	ActSetpoint ActionKind = iota + 1 // a heated zone's setpoint (Temperature)
	ActRampRate                       // a heated zone's ramp rate (Rate)
	ActHeater                         // a heated zone's heater on/off (On)
	ActFlow                           // mass-flow setpoint of Target gas (Flow)
	ActSwitch                         // on/off output Target (On)
	ActAcquire                        // acquire a spectrum (Integration)
)

var kindNames = map[ActionKind]string{
	ActSetpoint: "set_setpoint", ActRampRate: "set_ramp_rate", ActHeater: "set_heater",
	ActFlow: "set_flow", ActSwitch: "set_switch", ActAcquire: "acquire",
}

func (k ActionKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// MarshalText writes the kind's name.
func (k ActionKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Action is one request to move an actuator, in device units. Build it with
// the constructors; only the field of its kind is meaningful.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Target is the gas (ActFlow), the switch (ActSwitch) or the heated
	// zone (ActSetpoint, ActRampRate, ActHeater; empty: the zone named
	// furnace, whose channels are furnace.*).
	Target      string                 `json:"target,omitempty"`
	Temperature device.Temperature     `json:"temperature_k,omitempty"`
	Rate        device.TemperatureRate `json:"rate_k_per_min,omitempty"`
	Flow        device.Flow            `json:"flow_sccm,omitempty"`
	On          bool                   `json:"on,omitempty"`
	Integration time.Duration          `json:"integration_ns,omitempty"`
}

// SetpointAction sets the setpoint of the zone named furnace.
func SetpointAction(t device.Temperature) Action { return Action{Kind: ActSetpoint, Temperature: t} }

// RampRateAction sets the ramp rate of the zone named furnace.
func RampRateAction(r device.TemperatureRate) Action { return Action{Kind: ActRampRate, Rate: r} }

// HeaterAction enables or disables the heater of the zone named furnace.
func HeaterAction(on bool) Action { return Action{Kind: ActHeater, On: on} }

// ZoneSetpointAction sets the setpoint of the heated zone named zone.
func ZoneSetpointAction(zone string, t device.Temperature) Action {
	return Action{Kind: ActSetpoint, Target: zoneTarget(zone), Temperature: t}
}

// ZoneRampRateAction sets the ramp rate of the heated zone named zone.
func ZoneRampRateAction(zone string, r device.TemperatureRate) Action {
	return Action{Kind: ActRampRate, Target: zoneTarget(zone), Rate: r}
}

// ZoneHeaterAction enables or disables the heater of the heated zone named zone.
func ZoneHeaterAction(zone string, on bool) Action {
	return Action{Kind: ActHeater, Target: zoneTarget(zone), On: on}
}

// zoneTarget is an action's Target for a zone: empty for the zone named
// furnace, so that its actions (and their audit records) are those of
// SetpointAction and its kin.
//
//go:noinline
func zoneTarget(zone string) string {
	if zone == rig.FurnaceName {
		return ""
	}
	return zone
}

// Zone is the heated zone a setpoint, ramp rate or heater action drives
// (rig.FurnaceName for an empty Target); "" for another kind.
//
//go:noinline
func (a Action) Zone() string {
	switch a.Kind {
	case ActSetpoint, ActRampRate, ActHeater:
		if a.Target == "" {
			return rig.FurnaceName
		}
		return a.Target
	}
	return ""
}

// FlowAction sets the mass-flow setpoint of gas.
func FlowAction(gas string, f device.Flow) Action { return Action{Kind: ActFlow, Target: gas, Flow: f} }

// SwitchAction drives the named output (valve, pump, scrubber).
func SwitchAction(name string, on bool) Action { return Action{Kind: ActSwitch, Target: name, On: on} }

// AcquireAction acquires a spectrum with the given integration time.
func AcquireAction(integration time.Duration) Action {
	return Action{Kind: ActAcquire, Integration: integration}
}

// Channel is the envelope channel the action writes.
func (a Action) Channel() string {
	switch a.Kind {
	case ActSetpoint, ActRampRate, ActHeater:
		return a.zoneChannel()
	case ActFlow:
		return FlowChannel(a.Target)
	case ActSwitch:
		return SwitchChannel(a.Target)
	case ActAcquire:
		return ChannelIntegration
	}
	return "unknown"
}

// zoneChannel is the channel of a zone's action: a constant for the zone
// named furnace (no string to make on the interlock's path).
//
//go:noinline
func (a Action) zoneChannel() string {
	ch, what := ChannelHeater, ZoneHeater
	switch a.Kind {
	case ActSetpoint:
		ch, what = ChannelSetpoint, ZoneSetpoint
	case ActRampRate:
		ch, what = ChannelRampRate, ZoneRampRate
	}
	if a.Target == "" {
		return ch
	}
	return ZoneChannel(a.Target, what)
}

// Value is the requested value in device units: kelvin, K/min, sccm,
// seconds, or 1/0 for on/off.
func (a Action) Value() float64 {
	switch a.Kind {
	case ActSetpoint:
		return float64(a.Temperature)
	case ActRampRate:
		return float64(a.Rate)
	case ActFlow:
		return float64(a.Flow)
	case ActAcquire:
		return a.Integration.Seconds()
	case ActHeater, ActSwitch:
		if a.On {
			return 1
		}
	}
	return 0
}

func (a Action) String() string {
	switch a.Kind {
	case ActSetpoint:
		return fmt.Sprintf("%s = %v", a.Channel(), a.Temperature)
	case ActRampRate:
		return fmt.Sprintf("%s = %v", a.Channel(), a.Rate)
	case ActFlow:
		return fmt.Sprintf("%s = %v", a.Channel(), a.Flow)
	case ActAcquire:
		return fmt.Sprintf("%s = %v", a.Channel(), a.Integration)
	case ActHeater, ActSwitch:
		return fmt.Sprintf("%s = %v", a.Channel(), onOff(a.On))
	}
	return a.Kind.String()
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Level is one reading of an on/off output or a digital input.
type Level struct {
	On bool
	At time.Time
}

// Readings is one snapshot of the rig, in device units, each part with the
// instant it was read. At is the instant of the decision ("now"); a part
// older than the envelope's MaxReadingAge, or never read (zero time), is
// stale, and a rule that needs it refuses.
//
// Furnace is the controller of the rig's first heated zone (the zone named
// furnace on a rig of one); Zones holds the others', by zone name
// (Envelope.ZoneReading reads either).
type Readings struct {
	At       time.Time
	Furnace  device.FurnaceStatus
	Zones    map[string]device.FurnaceStatus `json:",omitempty"` // the zones after the first, by name
	Pressure device.PressureReading
	Flows    map[string]device.FlowStatus // by gas
	Switches map[string]Level             // by switch name (read-back)
	Inputs   map[string]Level             // by input name
}
