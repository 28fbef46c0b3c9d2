package envelope

import (
	"time"

	"github.com/hcp-edge/hcp-edge/device"
)

// Channel names. A writable channel is something an Action sets; the
// read-only ones carry trip thresholds.
const (
	ChannelSetpoint    = "furnace.setpoint"         // temperature, writable
	ChannelRampRate    = "furnace.ramp_rate"        // temperature rate, writable
	ChannelHeater      = "furnace.heater"           // on/off, writable
	ChannelIntegration = "spectrometer.integration" // duration of an acquisition, writable
	ChannelTemperature = "furnace.temperature"      // process value, read-only (over_temperature)
	ChannelPressure    = "chamber.pressure"         // gauge, read-only (over_pressure)
)

// FlowChannel is the writable channel of a gas's mass-flow setpoint.
func FlowChannel(gas string) string { return "flow." + gas }

// SwitchChannel is the writable channel of an on/off output.
func SwitchChannel(name string) string { return "switch." + name }

// RigSpec declares what the rig's instruments can do: ranges, gases, outputs
// and inputs. Compile refuses an envelope whose limits lie outside these
// ranges or that leaves a writable channel unbounded; NewInterlock checks the
// Rig against it.
type RigSpec struct {
	Furnace      FurnaceSpec
	Gauge        GaugeSpec
	Gases        []GasSpec
	Switches     []SwitchSpec
	Inputs       []string
	Spectrometer *SpectrometerSpec // nil: no spectrometer
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

// GaugeSpec is the vacuum gauge's measuring range.
type GaugeSpec struct{ Min, Max device.Pressure }

// GasSpec is one gas line: its mass-flow controller and its line valve.
type GasSpec struct {
	Gas       string      // e.g. "H2S"; the FlowControllers key of the Rig
	FullScale device.Flow // the controller's range
	Valve     string      // the Switch that opens the line
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

// SimRigSpec is the rig of configs/rig-protocols.md, as firmware-sim
// simulates it.
func SimRigSpec() RigSpec {
	return RigSpec{
		Furnace: FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(1200),
			RampMax: device.KelvinPerMinute(100), ProcessValueMax: device.Celsius(1300)},
		Gauge: GaugeSpec{Min: 5e-9 * device.Millibar, Max: 1e3 * device.Millibar},
		Gases: []GasSpec{
			{Gas: "Ar", FullScale: device.SCCM(500), Valve: "ar_valve"},
			{Gas: "H2", FullScale: device.SCCM(200), Valve: "h2_valve"},
			{Gas: "H2S", FullScale: device.SCCM(50), Valve: "h2s_valve"},
		},
		Switches: []SwitchSpec{
			{Name: "pump", SafeState: false},
			{Name: "gate_valve", SafeState: false},
			{Name: "ar_valve", SafeState: false},
			{Name: "h2_valve", SafeState: false},
			{Name: "h2s_valve", SafeState: false},
			{Name: "vent_valve", SafeState: false},
			{Name: "scrubber", SafeState: true},
			{Name: "relay", SafeState: false, InterlockOwned: true},
		},
		Inputs:       []string{"door_closed", "exhaust_ok", "pump_running", "estop_pressed", "leak_detected", "relay_fb"},
		Spectrometer: &SpectrometerSpec{MinIntegration: 10 * time.Millisecond, MaxIntegration: 60 * time.Second},
		Wires: map[string]string{
			ChannelSetpoint:             "modbus unit 1 HR 0 (0.1 °C)",
			ChannelRampRate:             "modbus unit 1 HR 1 (0.1 °C/min)",
			ChannelHeater:               "modbus unit 1 HR 2",
			FlowChannel("Ar"):           "mfc-ar serial `AS<value>`",
			FlowChannel("H2"):           "mfc-h2 serial `BS<value>`",
			FlowChannel("H2S"):          "mfc-h2s serial `CS<value>`",
			SwitchChannel("pump"):       "modbus unit 2 coil 0",
			SwitchChannel("gate_valve"): "modbus unit 2 coil 1",
			SwitchChannel("ar_valve"):   "modbus unit 2 coil 2",
			SwitchChannel("h2_valve"):   "modbus unit 2 coil 3",
			SwitchChannel("h2s_valve"):  "modbus unit 2 coil 4",
			SwitchChannel("vent_valve"): "modbus unit 2 coil 5",
			SwitchChannel("scrubber"):   "modbus unit 2 coil 6",
			SwitchChannel("relay"):      "gpio relay",
			ChannelIntegration:          "raman serial `ACQ <ms>`",
		},
		Internal: []InternalWrite{
			{Channel: "furnace.watchdog_timeout", Wire: "modbus unit 1 HR 3", Reason: "set once by the driver at start"},
			{Channel: "furnace.watchdog_kick", Wire: "modbus unit 1 HR 4", Reason: "kicked by the driver; no effect on the process"},
			{Channel: "furnace.alarm_limit", Wire: "modbus unit 1 HR 5", Reason: "high-temperature alarm of the controller, set once at start; the envelope trips earlier"},
			{Channel: "mfc.hold", Wire: "mfc serial `xHC` / `xC`", Reason: "hold closes the valve: used by Halt only"},
			{Channel: "gauge.unit", Wire: "gauge serial `UNI,n`", Reason: "display unit of the gauge; the driver converts"},
			{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"},
		},
	}
}
