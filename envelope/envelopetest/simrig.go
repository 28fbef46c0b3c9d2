// Package envelopetest holds test support for the packages that use the
// envelope: the simulated rig's RigSpec, as configs/sim.yaml and its
// profiles derive it (the layout read by configs/simrig; the furnace's
// ranges are its profile's, hcp-sim-tc), without the agent's configuration
// package.
package envelopetest

import (
	"time"

	"github.com/hcp-edge/hcp-edge/configs/simrig"
	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/device/rig"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// GPIO input names the agent gives the e-stop, leak and relay read-back
// lines (rigconfig's), and its interlock relay output.
const (
	inputEStop   = "estop_pressed"
	inputLeak    = "leak_detected"
	inputRelayFB = "relay_fb"
	switchRelay  = "relay"
)

// SimRigSpec is the rig of configs/sim.yaml (configs/rig-protocols.md), as
// firmware-sim simulates it and rigconfig.Spec derives it (a test of
// rigconfig holds the two equal). The envelope's own tests have a copy.
func SimRigSpec() envelope.RigSpec {
	l := simrig.Sim()
	s := envelope.RigSpec{
		Furnace: envelope.FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(1200),
			RampMax: device.KelvinPerMinute(100), ProcessValueMax: device.Celsius(1300)},
		Gauge:        envelope.GaugeSpec{Min: 5e-9 * device.Millibar, Max: 1e3 * device.Millibar},
		Spectrometer: &envelope.SpectrometerSpec{MinIntegration: 10 * time.Millisecond, MaxIntegration: 60 * time.Second},
		Roles: envelope.Roles{Pump: l.Role("pump"), Gate: l.Role("gate"), Vent: l.Role("vent"),
			Scrubber: l.Role("exhaust_scrubber"), Door: l.Role("door")},
		Wires: map[string]string{
			envelope.ChannelSetpoint:    "modbus unit 1 HR 0 (0.1 °C)",
			envelope.ChannelRampRate:    "modbus unit 1 HR 1 (0.1 °C/min)",
			envelope.ChannelHeater:      "modbus unit 1 HR 2",
			envelope.ChannelIntegration: "raman serial `ACQ <ms>`",
		},
	}
	for _, g := range l.Lines {
		s.Gases = append(s.Gases, envelope.GasSpec{Gas: g.Gas, FullScale: device.SCCM(g.FullScaleSCCM), Valve: g.Valve, Hazard: rig.Hazard(g.Hazard)})
		s.Wires[envelope.FlowChannel(g.Gas)] = g.MFC + " serial `" + g.UnitID + "S<value>`"
	}
	for _, o := range l.Outputs {
		s.Switches = append(s.Switches, envelope.SwitchSpec{Name: o.Name, SafeState: o.Safe})
		s.Wires[envelope.SwitchChannel(o.Name)] = "modbus unit 2 " + o.Channel
	}
	s.Switches = append(s.Switches, envelope.SwitchSpec{Name: switchRelay, SafeState: false, InterlockOwned: true})
	s.Wires[envelope.SwitchChannel(switchRelay)] = "gpio relay"
	for _, in := range l.Inputs {
		s.Inputs = append(s.Inputs, in.Name)
	}
	s.Inputs = append(s.Inputs, inputEStop, inputLeak, inputRelayFB)
	s.Internal = []envelope.InternalWrite{
		{Channel: "furnace.watchdog_timeout", Wire: "modbus unit 1 HR 3", Reason: "set once by the driver at start"},
		{Channel: "furnace.watchdog_kick", Wire: "modbus unit 1 HR 4", Reason: "kicked by the driver; no effect on the process"},
		{Channel: "furnace.alarm_limit", Wire: "modbus unit 1 HR 5", Reason: "high-temperature alarm of the controller, set once at start; the envelope trips earlier"},
		{Channel: "mfc.hold", Wire: "mfc serial `xHC` / `xC`", Reason: "hold closes the valve: used by Halt only"},
		{Channel: "gauge.unit", Wire: "gauge serial `UNI,n`", Reason: "display unit of the gauge; the driver converts"},
		{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"},
	}
	return s
}
