package rigbuild

import (
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/profile"
)

// The spectrometer's integration range (its driver's: it has no profile),
// the furnace's ramp limit when its profile has no ramp_rate channel, and
// its measuring limit when the process value declares no range.
const (
	ramanMinIntegration = 10 * time.Millisecond
	ramanMaxIntegration = 60 * time.Second
	rampDefault         = 100  // K/min
	pvMaxDefault        = 1300 // °C
)

var internalReason = map[profile.Role]string{
	profile.RoleWatchdogTimeout: "set once by the driver at start",
	profile.RoleWatchdogKick:    "kicked by the driver; no effect on the process",
	profile.RoleAlarmLimit:      "high-temperature alarm of the controller, set once at start; the envelope trips earlier",
}

// FactsOf reads from the profiles what the envelope's spec of r needs
// (rig.Facts): the furnace controller's ranges from its profile's channels,
// the gauge's measuring range, and the wire of every writable channel and
// of every internal write of a driver, for the coverage report.
func FactsOf(r rig.Config, ps Profiles) (rig.Facts, error) {
	f := rig.Facts{Zones: map[string]rig.ZoneFacts{}, Heads: map[string]rig.HeadFacts{}, Lines: map[string]string{}, Outputs: map[string]string{}}
	fp, err := ps.Lookup(r.Furnace.Profile, profile.TemperatureController)
	if err != nil {
		return rig.Facts{}, fmt.Errorf("rigconfig: furnace: %w", err)
	}
	gp, err := ps.Serial(r.Gauge.Profile, profile.PressureGauge, profile.TPG)
	if err != nil {
		return rig.Facts{}, fmt.Errorf("rigconfig: gauge: %w", err)
	}
	gc := gp.Channels[0]
	if r.Gauge.Channel != "" {
		gc, _ = gp.Channel(r.Gauge.Channel)
	}
	gu, ok := profile.PressureUnit(gc.Unit)
	if !ok || len(gc.Range) != 2 {
		return rig.Facts{}, fmt.Errorf("rigconfig: gauge: profile %s: gauge %q declares no measuring range", gp.ID, r.Gauge.Channel)
	}
	f.Heads[r.GaugeName()] = rig.HeadFacts{Min: device.Pressure(gc.Range[0]) * gu, Max: device.Pressure(gc.Range[1]) * gu}
	f.Spectrometer = &rig.SpectrometerFacts{MinIntegration: ramanMinIntegration, MaxIntegration: ramanMaxIntegration,
		Wire: fmt.Sprintf("%s serial `ACQ <ms>`", r.RamanName())}
	at := fmt.Sprintf("modbus %s unit %d", r.Furnace.Bus, r.Furnace.Unit)
	wire := func(ch profile.Channel) string {
		return fmt.Sprintf("%s %s %d %s (%s)", at, ch.Table, *ch.Address, ch.Name, fp.ID)
	}
	var z rig.ZoneFacts
	if sp, ok := fp.ByRole(profile.RoleSetpoint); ok && len(sp.Range) == 2 {
		cr := sp.CanonicalRange() // the profile's unit (°F, K, °C) in °C: every limit compared in one unit
		z.SetpointMin, z.SetpointMax = device.Celsius(cr[0]), device.Celsius(cr[1])
		z.SetpointWire = wire(sp)
	} else {
		return rig.Facts{}, fmt.Errorf("rigconfig: furnace: profile %s: the setpoint channel declares no range", fp.ID)
	}
	z.RampMax = device.KelvinPerMinute(rampDefault)
	if rr, ok := fp.ByRole(profile.RoleRampRate); ok {
		if len(rr.Range) == 2 {
			z.RampMax = device.KelvinPerMinute(rr.CanonicalRange()[1])
		}
		z.RampRateWire = wire(rr)
	}
	pv, _ := fp.ByRole(profile.RoleProcessValue)
	z.ProcessValueMax = device.Celsius(pvMaxDefault)
	if len(pv.Range) == 2 {
		z.ProcessValueMax = device.Celsius(pv.CanonicalRange()[1])
	}
	he, _ := fp.ByRole(profile.RoleHeaterEnable)
	z.HeaterWire = wire(he)
	f.Zones[rig.FurnaceName] = z
	for _, role := range []profile.Role{profile.RoleWatchdogTimeout, profile.RoleWatchdogKick, profile.RoleAlarmLimit} {
		if ch, ok := fp.ByRole(role); ok {
			f.Internal = append(f.Internal, rig.InternalWrite{Channel: "furnace." + string(role), Wire: wire(ch), Reason: internalReason[role]})
		}
	}
	for _, ch := range fp.Channels {
		if ch.Role == profile.RoleInit {
			f.Internal = append(f.Internal, rig.InternalWrite{Channel: "furnace." + ch.Name, Wire: wire(ch),
				Reason: fmt.Sprintf("set once at start to %g, after the heater is off: the mode the profile's roles assume", *ch.Value)})
		}
		if ch.Writable() && ch.Role == "" {
			return rig.Facts{}, fmt.Errorf("rigconfig: furnace: profile %s: writable channel %s has no role", fp.ID, ch.Name)
		}
	}
	f.Internal = append(f.Internal,
		rig.InternalWrite{Channel: "gauge.unit", Wire: fmt.Sprintf("%s serial `%s,n` (%s)", r.GaugeName(), gp.Commands["unit"], gp.ID), Reason: "display unit of the gauge; the driver converts"},
		rig.InternalWrite{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"})
	dp, err := ps.Lookup(r.DIO.Profile, profile.IOModule)
	if err != nil {
		return rig.Facts{}, fmt.Errorf("rigconfig: dio: %w", err)
	}
	for _, name := range r.OutputNames() {
		o := r.Outputs[name]
		ch, ok := dp.Channel(o.Channel)
		if !ok {
			return rig.Facts{}, fmt.Errorf("rigconfig: output %s: profile %s has no channel %q", name, dp.ID, o.Channel)
		}
		f.Outputs[name] = fmt.Sprintf("modbus %s unit %d %s %d %s (%s)", r.DIO.Bus, r.DIO.Unit, ch.Table, *ch.Address, ch.Name, dp.ID)
	}
	for _, m := range r.MFCs {
		if _, err := rig.ParseFlow(m.FullScale); err != nil {
			return rig.Facts{}, fmt.Errorf("rigconfig: %s: %w", m.Name, err)
		}
		if _, ok := r.Outputs[m.Valve]; !ok {
			return rig.Facts{}, fmt.Errorf("rigconfig: %s: valve %q is not an output of the layout", m.Name, m.Valve)
		}
		mp, err := ps.Serial(m.Profile, profile.FlowController, profile.Alicat)
		if err != nil {
			return rig.Facts{}, fmt.Errorf("rigconfig: %s: %w", m.Name, err)
		}
		sp, _ := mp.ByRole(profile.RoleSetpoint)
		f.Lines[m.Gas] = fmt.Sprintf("%s serial `%s%s<value>` on %s (%s)", m.Name, m.UnitID, sp.Command, m.Port, mp.ID)
		f.Internal = append(f.Internal, rig.InternalWrite{Channel: m.Name + ".hold", Reason: "hold closes the valve: used by Halt only",
			Wire: fmt.Sprintf("%s serial `%s%s` / `%s%s` (%s)", m.Name, m.UnitID, mp.Commands["hold_closed"], m.UnitID, mp.Commands["cancel_hold"], mp.ID)})
	}
	return f, nil
}
