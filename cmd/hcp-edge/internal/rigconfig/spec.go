package rigconfig

import (
	"fmt"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/profile"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// The spectrometer's integration range (its driver's: it has no profile)
// and the furnace's ramp limit when its profile has no ramp_rate channel.
var (
	ramanRange  = envelope.SpectrometerSpec{MinIntegration: 10 * time.Millisecond, MaxIntegration: 60 * time.Second}
	rampDefault = device.KelvinPerMinute(100)
)

// Spec derives the envelope.RigSpec of r from its layout and profiles: the
// furnace controller's ranges from its profile's channels, the gauge's
// measuring range from its profile, the gas lines with their full scales,
// hazard classes and line valves, the outputs with their safe levels and
// roles plus the interlock relay, the inputs, and the wire of every writable
// channel (and every internal write of a driver) for the coverage report.
func Spec(r Rig) (envelope.RigSpec, error) {
	ps, err := r.Profiles()
	if err != nil {
		return envelope.RigSpec{}, err
	}
	fp, err := ps.Lookup(r.Furnace.Profile, profile.TemperatureController)
	if err != nil {
		return envelope.RigSpec{}, fmt.Errorf("rigconfig: furnace: %w", err)
	}
	gp, err := ps.Serial(r.Gauge.Profile, profile.PressureGauge, profile.TPG)
	if err != nil {
		return envelope.RigSpec{}, fmt.Errorf("rigconfig: gauge: %w", err)
	}
	gc := gp.Channels[0]
	if r.Gauge.Channel != "" {
		gc, _ = gp.Channel(r.Gauge.Channel)
	}
	gu, ok := profile.PressureUnit(gc.Unit)
	if !ok || len(gc.Range) != 2 {
		return envelope.RigSpec{}, fmt.Errorf("rigconfig: gauge: profile %s: gauge %q declares no measuring range", gp.ID, r.Gauge.Channel)
	}
	s := envelope.RigSpec{Gauge: envelope.GaugeSpec{Min: device.Pressure(gc.Range[0]) * gu, Max: device.Pressure(gc.Range[1]) * gu},
		Spectrometer: &ramanRange, Wires: map[string]string{},
		Roles: envelope.Roles{Pump: r.Role(RolePump), Gate: r.Role(RoleGate), Vent: r.Role(RoleVent),
			Scrubber: r.Role(RoleScrubber), Door: r.Role(RoleDoor)}}
	at := fmt.Sprintf("modbus %s unit %d", r.Furnace.Bus, r.Furnace.Unit)
	wire := func(ch profile.Channel) string {
		return fmt.Sprintf("%s %s %d %s (%s)", at, ch.Table, *ch.Address, ch.Name, fp.ID)
	}
	if sp, ok := fp.ByRole(profile.RoleSetpoint); ok && len(sp.Range) == 2 {
		r := sp.CanonicalRange() // the profile's unit (°F, K, °C) in °C: every limit compared in one unit
		s.Furnace.SetpointMin, s.Furnace.SetpointMax = device.Celsius(r[0]), device.Celsius(r[1])
		s.Wires[envelope.ChannelSetpoint] = wire(sp)
	} else {
		return envelope.RigSpec{}, fmt.Errorf("rigconfig: furnace: profile %s: the setpoint channel declares no range", fp.ID)
	}
	s.Furnace.RampMax = rampDefault
	if rr, ok := fp.ByRole(profile.RoleRampRate); ok {
		if len(rr.Range) == 2 {
			s.Furnace.RampMax = device.KelvinPerMinute(rr.CanonicalRange()[1])
		}
		s.Wires[envelope.ChannelRampRate] = wire(rr)
	}
	pv, _ := fp.ByRole(profile.RoleProcessValue)
	s.Furnace.ProcessValueMax = device.Celsius(1300)
	if len(pv.Range) == 2 {
		s.Furnace.ProcessValueMax = device.Celsius(pv.CanonicalRange()[1])
	}
	he, _ := fp.ByRole(profile.RoleHeaterEnable)
	s.Wires[envelope.ChannelHeater] = wire(he)
	s.Wires[envelope.ChannelIntegration] = fmt.Sprintf("%s serial `ACQ <ms>`", r.RamanName())
	for _, role := range []profile.Role{profile.RoleWatchdogTimeout, profile.RoleWatchdogKick, profile.RoleAlarmLimit} {
		if ch, ok := fp.ByRole(role); ok {
			s.Internal = append(s.Internal, envelope.InternalWrite{Channel: "furnace." + string(role), Wire: wire(ch), Reason: internalReason[role]})
		}
	}
	for _, ch := range fp.Channels {
		if ch.Role == profile.RoleInit {
			s.Internal = append(s.Internal, envelope.InternalWrite{Channel: "furnace." + ch.Name, Wire: wire(ch),
				Reason: fmt.Sprintf("set once at start to %g, after the heater is off: the mode the profile's roles assume", *ch.Value)})
		}
		if ch.Writable() && ch.Role == "" {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: furnace: profile %s: writable channel %s has no role", fp.ID, ch.Name)
		}
	}
	s.Internal = append(s.Internal,
		envelope.InternalWrite{Channel: "gauge.unit", Wire: fmt.Sprintf("%s serial `%s,n` (%s)", r.GaugeName(), gp.Commands["unit"], gp.ID), Reason: "display unit of the gauge; the driver converts"},
		envelope.InternalWrite{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"})
	dp, err := ps.Lookup(r.DIO.Profile, profile.IOModule)
	if err != nil {
		return envelope.RigSpec{}, fmt.Errorf("rigconfig: dio: %w", err)
	}
	for _, name := range sortedKeys(r.Outputs) {
		o := r.Outputs[name]
		s.Switches = append(s.Switches, envelope.SwitchSpec{Name: name, SafeState: o.Safe == "on"})
		ch, ok := dp.Channel(o.Channel)
		if !ok {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: output %s: profile %s has no channel %q", name, dp.ID, o.Channel)
		}
		s.Wires[envelope.SwitchChannel(name)] = fmt.Sprintf("modbus %s unit %d %s %d %s (%s)", r.DIO.Bus, r.DIO.Unit, ch.Table, *ch.Address, ch.Name, dp.ID)
	}
	s.Switches = append(s.Switches, envelope.SwitchSpec{Name: SwitchRelay, SafeState: false, InterlockOwned: true})
	s.Wires[envelope.SwitchChannel(SwitchRelay)] = "gpio relay (read back on relay_fb)"
	for _, m := range r.MFCs {
		fs, err := ParseFlow(m.FullScale)
		if err != nil {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: %s: %w", m.Name, err)
		}
		if _, ok := r.Outputs[m.Valve]; !ok {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: %s: valve %q is not an output of the layout", m.Name, m.Valve)
		}
		mp, err := ps.Serial(m.Profile, profile.FlowController, profile.Alicat)
		if err != nil {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: %s: %w", m.Name, err)
		}
		sp, _ := mp.ByRole(profile.RoleSetpoint)
		s.Gases = append(s.Gases, envelope.GasSpec{Gas: m.Gas, FullScale: fs, Valve: m.Valve, Hazard: m.Hazard})
		s.Wires[envelope.FlowChannel(m.Gas)] = fmt.Sprintf("%s serial `%s%s<value>` on %s (%s)", m.Name, m.UnitID, sp.Command, m.Port, mp.ID)
		s.Internal = append(s.Internal, envelope.InternalWrite{Channel: m.Name + ".hold", Reason: "hold closes the valve: used by Halt only",
			Wire: fmt.Sprintf("%s serial `%s%s` / `%s%s` (%s)", m.Name, m.UnitID, mp.Commands["hold_closed"], m.UnitID, mp.Commands["cancel_hold"], mp.ID)})
	}
	s.Inputs = append(sortedKeys(r.Inputs), InputEStop, InputLeak, InputRelayFB)
	return s, nil
}

var internalReason = map[profile.Role]string{
	profile.RoleWatchdogTimeout: "set once by the driver at start",
	profile.RoleWatchdogKick:    "kicked by the driver; no effect on the process",
	profile.RoleAlarmLimit:      "high-temperature alarm of the controller, set once at start; the envelope trips earlier",
}
