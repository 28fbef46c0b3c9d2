package envelope

import (
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/device"
)

// SimRigSpec is the rig of configs/sim.yaml (configs/rig-protocols.md), as
// firmware-sim simulates it, for this package's tests; other packages'
// tests take cmd/hiltest/simrig's Spec, derived from configs/sim.yaml and its
// profiles (this package's tests cannot import it: it imports envelope).
func SimRigSpec() RigSpec {
	return RigSpec{
		Furnace: FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(1200),
			RampMax: device.KelvinPerMinute(100), ProcessValueMax: device.Celsius(1300)},
		Gauge: GaugeSpec{Min: 5e-9 * device.Millibar, Max: 1e3 * device.Millibar},
		Gases: []GasSpec{
			{Gas: "Ar", FullScale: device.SCCM(500), Valve: "ar_valve", Hazard: rig.Inert},
			{Gas: "H2", FullScale: device.SCCM(200), Valve: "h2_valve", Hazard: rig.Flammable},
			{Gas: "H2S", FullScale: device.SCCM(50), Valve: "h2s_valve", Hazard: rig.Toxic},
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
		Roles:        Roles{Pump: "pump", Gate: "gate_valve", Vent: "vent_valve", Scrubber: "scrubber", Door: "door_closed"},
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
