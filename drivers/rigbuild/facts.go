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
// (rig.Facts): each zone's ranges from its own controller's profile, each
// gauge head's measuring range from its controller's profile, and the wire
// of every writable channel and of every internal write of a driver, for
// the coverage report. Either shape of r is read (rig.Config.ZoneEntries).
func FactsOf(r rig.Config, ps Profiles) (rig.Facts, error) {
	f := rig.Facts{Zones: map[string]rig.ZoneFacts{}, Heads: map[string]rig.HeadFacts{}, Lines: map[string]string{}, Outputs: map[string]string{}}
	for _, z := range r.ZoneEntries() {
		if err := zoneFacts(&f, z, ps); err != nil {
			return rig.Facts{}, err
		}
	}
	for _, g := range r.GaugeEntries() {
		what := g.Key // rig.gauge's messages say "gauge", as before the list shape
		gp, err := ps.Serial(g.Profile, profile.PressureGauge, profile.TPG)
		if err != nil {
			return rig.Facts{}, fmt.Errorf("rigconfig: %s: %w", what, err)
		}
		for _, h := range g.Heads {
			gc := gp.Channels[0]
			if h.Channel != "" {
				gc, _ = gp.Channel(h.Channel)
			}
			gu, ok := profile.PressureUnit(gc.Unit)
			if !ok || len(gc.Range) != 2 {
				return rig.Facts{}, fmt.Errorf("rigconfig: %s: profile %s: gauge %q declares no measuring range", what, gp.ID, h.Channel)
			}
			f.Heads[h.Name] = rig.HeadFacts{Min: device.Pressure(gc.Range[0]) * gu, Max: device.Pressure(gc.Range[1]) * gu}
		}
		channel := "gauge.unit"
		if len(r.Gauges) > 0 {
			channel = g.Name + ".unit"
		}
		f.Internal = append(f.Internal, rig.InternalWrite{Channel: channel, Wire: fmt.Sprintf("%s serial `%s,n` (%s)", g.Name, gp.Commands["unit"], gp.ID), Reason: "display unit of the gauge; the driver converts"})
	}
	f.Spectrometer = &rig.SpectrometerFacts{MinIntegration: ramanMinIntegration, MaxIntegration: ramanMaxIntegration,
		Wire: fmt.Sprintf("%s serial `ACQ <ms>`", r.RamanName())}
	f.Internal = append(f.Internal, rig.InternalWrite{Channel: "spectrometer.stop", Wire: "raman serial `STOP`", Reason: "aborts an acquisition: used by Halt only"})
	modules := map[string]rig.ModuleEntry{}
	for _, m := range r.ModuleEntries() {
		modules[m.Name] = m
	}
	for _, name := range r.OutputNames() {
		o := r.Outputs[name]
		m, ok := modules[r.ModuleOf(o.Module)]
		if !ok {
			return rig.Facts{}, fmt.Errorf("rigconfig: output %s: module %q is not a module of the layout", name, o.Module)
		}
		dp, err := ps.Lookup(m.Profile, profile.IOModule)
		if err != nil {
			return rig.Facts{}, fmt.Errorf("rigconfig: %s: %w", m.Key, err)
		}
		ch, ok := dp.Channel(o.Channel)
		if !ok {
			return rig.Facts{}, fmt.Errorf("rigconfig: output %s: profile %s has no channel %q", name, dp.ID, o.Channel)
		}
		f.Outputs[name] = fmt.Sprintf("modbus %s unit %d %s %d %s (%s)", m.Bus, m.Unit, ch.Table, *ch.Address, ch.Name, dp.ID)
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

// zoneFacts adds to f a zone's ranges and wires, from its controller's
// profile, and the controller driver's own writes, named by the zone
// (furnace.watchdog_kick for the one-entry shape's zone).
func zoneFacts(f *rig.Facts, z rig.ZoneEntry, ps Profiles) error {
	what := z.Key // "furnace" for the one-entry shape, as before the list shape
	fp, err := ps.Lookup(z.Profile, profile.TemperatureController)
	if err != nil {
		return fmt.Errorf("rigconfig: %s: %w", what, err)
	}
	at := fmt.Sprintf("modbus %s unit %d", z.Bus, z.Unit)
	wire := func(ch profile.Channel) string {
		return fmt.Sprintf("%s %s %d %s (%s)", at, ch.Table, *ch.Address, ch.Name, fp.ID)
	}
	var zf rig.ZoneFacts
	if sp, ok := fp.ByRole(profile.RoleSetpoint); ok && len(sp.Range) == 2 {
		cr := sp.CanonicalRange() // the profile's unit (°F, K, °C) in °C: every limit compared in one unit
		zf.SetpointMin, zf.SetpointMax = device.Celsius(cr[0]), device.Celsius(cr[1])
		zf.SetpointWire = wire(sp)
	} else {
		return fmt.Errorf("rigconfig: %s: profile %s: the setpoint channel declares no range", what, fp.ID)
	}
	zf.RampMax = device.KelvinPerMinute(rampDefault)
	if rr, ok := fp.ByRole(profile.RoleRampRate); ok {
		if len(rr.Range) == 2 {
			zf.RampMax = device.KelvinPerMinute(rr.CanonicalRange()[1])
		}
		zf.RampRateWire = wire(rr)
	}
	pv, _ := fp.ByRole(profile.RoleProcessValue)
	zf.ProcessValueMax = device.Celsius(pvMaxDefault)
	if len(pv.Range) == 2 {
		zf.ProcessValueMax = device.Celsius(pv.CanonicalRange()[1])
	}
	he, _ := fp.ByRole(profile.RoleHeaterEnable)
	zf.HeaterWire = wire(he)
	f.Zones[z.Name] = zf
	for _, role := range []profile.Role{profile.RoleWatchdogTimeout, profile.RoleWatchdogKick, profile.RoleAlarmLimit} {
		if ch, ok := fp.ByRole(role); ok {
			f.Internal = append(f.Internal, rig.InternalWrite{Channel: z.Name + "." + string(role), Wire: wire(ch), Reason: internalReason[role]})
		}
	}
	for _, ch := range fp.Channels {
		if ch.Role == profile.RoleInit {
			f.Internal = append(f.Internal, rig.InternalWrite{Channel: z.Name + "." + ch.Name, Wire: wire(ch),
				Reason: fmt.Sprintf("set once at start to %g, after the heater is off: the mode the profile's roles assume", *ch.Value)})
		}
		if ch.Writable() && ch.Role == "" {
			return fmt.Errorf("rigconfig: %s: profile %s: writable channel %s has no role", what, fp.ID, ch.Name)
		}
	}
	return nil
}
