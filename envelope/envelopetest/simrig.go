// Package envelopetest holds test support for the packages that use the
// envelope: the simulated rig's envelope.RigSpec, as configs/sim.yaml and its
// profiles derive it, without reading a configuration.
package envelopetest

import (
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// SimRigSpec is the rig of configs/sim.yaml (configs/rig-protocols.md), as
// firmware-sim simulates it and rigconfig.Spec derives it (a test of
// rigconfig holds the two equal). The envelope's own tests have a copy.
func SimRigSpec() envelope.RigSpec {
	return envelope.RigSpec{
		Furnace: envelope.FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(1200),
			RampMax: device.KelvinPerMinute(100), ProcessValueMax: device.Celsius(1300)},
		Gauge: envelope.GaugeSpec{Min: 5e-9 * device.Millibar, Max: 1e3 * device.Millibar},
		Gases: []envelope.GasSpec{
			{Gas: "Ar", FullScale: device.SCCM(500), Valve: "ar_valve", Hazard: envelope.HazardInert},
			{Gas: "H2", FullScale: device.SCCM(200), Valve: "h2_valve", Hazard: envelope.HazardFlammable},
			{Gas: "H2S", FullScale: device.SCCM(50), Valve: "h2s_valve", Hazard: envelope.HazardToxic},
		},
		Switches: []envelope.SwitchSpec{
			{Name: "pump", SafeState: false},
			{Name: "gate_valve", SafeState: false},
			{Name: "ar_valve", SafeState: false},
			{Name: "h2_valve", SafeState: false},
			{Name: "h2s_valve", SafeState: false},
			{Name: "vent_valve", SafeState: false},
			{Name: "scrubber", SafeState: true},
			{Name: "relay", SafeState: false, InterlockOwned: true},
		},
		Roles:        envelope.Roles{Pump: "pump", Gate: "gate_valve", Vent: "vent_valve", Scrubber: "scrubber", Door: "door_closed"},
		Inputs:       []string{"door_closed", "exhaust_ok", "pump_running", "estop_pressed", "leak_detected", "relay_fb"},
		Spectrometer: &envelope.SpectrometerSpec{MinIntegration: 10 * time.Millisecond, MaxIntegration: 60 * time.Second},
		Wires: map[string]string{
			envelope.ChannelSetpoint:             "modbus unit 1 HR 0 (0.1 °C)",
			envelope.ChannelRampRate:             "modbus unit 1 HR 1 (0.1 °C/min)",
			envelope.ChannelHeater:               "modbus unit 1 HR 2",
			envelope.FlowChannel("Ar"):           "mfc-ar serial `AS<value>`",
			envelope.FlowChannel("H2"):           "mfc-h2 serial `BS<value>`",
			envelope.FlowChannel("H2S"):          "mfc-h2s serial `CS<value>`",
			envelope.SwitchChannel("pump"):       "modbus unit 2 coil 0",
			envelope.SwitchChannel("gate_valve"): "modbus unit 2 coil 1",
			envelope.SwitchChannel("ar_valve"):   "modbus unit 2 coil 2",
			envelope.SwitchChannel("h2_valve"):   "modbus unit 2 coil 3",
			envelope.SwitchChannel("h2s_valve"):  "modbus unit 2 coil 4",
			envelope.SwitchChannel("vent_valve"): "modbus unit 2 coil 5",
			envelope.SwitchChannel("scrubber"):   "modbus unit 2 coil 6",
			envelope.SwitchChannel("relay"):      "gpio relay",
			envelope.ChannelIntegration:          "raman serial `ACQ <ms>`",
		},
		Internal: []envelope.InternalWrite{
			{Channel: "furnace.watchdog_timeout", Wire: "modbus unit 1 HR 3", Reason: "set once by the driver at start"},
			{Channel: "furnace.watchdog_kick", Wire: "modbus unit 1 HR 4", Reason: "kicked by the driver; no effect on the process"},
			{Channel: "furnace.alarm_limit", Wire: "modbus unit 1 HR 5", Reason: "high-temperature alarm of the controller, set once at start; the envelope trips earlier"},
			{Channel: "mfc.hold", Wire: "mfc serial `xHC` / `xC`", Reason: "hold closes the valve: used by Halt only"},
			{Channel: "gauge.unit", Wire: "gauge serial `UNI,n`", Reason: "display unit of the gauge; the driver converts"},
			{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"},
		},
	}
}
