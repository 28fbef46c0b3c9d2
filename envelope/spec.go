package envelope

import (
	"fmt"

	"hcp-edge/device/rig"
)

// SpecOf derives the RigSpec of a rig from its layout (device/rig) and what
// its instruments' profiles say (rig.Facts, which drivers/rigbuild's
// FactsOf reads from them): the one place the spec is made, for the agent,
// its configuration check and the tests alike. The heated zones are the
// layout's, in its order, each with its controller's ranges (Zones, and
// Furnace the first's; a rig whose only zone is named furnace has Furnace
// alone, its channels furnace.*), and the gauge its process head; the gas lines, in the
// layout's order, with their full scales, hazard classes and line valves;
// the outputs with their safe levels and roles plus the interlock relay;
// the inputs plus the GPIO lines; the wire of every writable channel and
// the drivers' own writes for the coverage report.
//
// A layout without a heated zone, or with other than one process head, is
// refused.
func SpecOf(l rig.Layout, f rig.Facts) (RigSpec, error) {
	if err := Drivable(l); err != nil {
		return RigSpec{}, fmt.Errorf("envelope: %w", err)
	}
	var head *rig.Head
	for i, h := range l.Heads {
		if h.Role == rig.HeadProcess {
			if head != nil {
				return RigSpec{}, fmt.Errorf("envelope: gauge heads %s and %s both read the process pressure", head.Name, h.Name)
			}
			head = &l.Heads[i]
		}
	}
	if head == nil {
		return RigSpec{}, fmt.Errorf("envelope: no gauge head reads the process pressure")
	}
	var zones []ZoneSpec
	wires := map[string]string{}
	for _, lz := range l.Zones {
		z, ok := f.Zones[lz.Name]
		if !ok {
			return RigSpec{}, fmt.Errorf("envelope: zone %s: no ranges", lz.Name)
		}
		zones = append(zones, ZoneSpec{Name: lz.Name, FurnaceSpec: FurnaceSpec{SetpointMin: z.SetpointMin, SetpointMax: z.SetpointMax,
			RampMax: z.RampMax, ProcessValueMax: z.ProcessValueMax}})
		wires[ZoneChannel(lz.Name, ZoneSetpoint)] = z.SetpointWire
		wires[ZoneChannel(lz.Name, ZoneHeater)] = z.HeaterWire
		if z.RampRateWire != "" {
			wires[ZoneChannel(lz.Name, ZoneRampRate)] = z.RampRateWire
		}
	}
	g, ok := f.Heads[head.Name]
	if !ok {
		return RigSpec{}, fmt.Errorf("envelope: gauge %s: no measuring range", head.Name)
	}
	s := RigSpec{
		Furnace: zones[0].FurnaceSpec,
		Gauge:   GaugeSpec{Min: g.Min, Max: g.Max},
		Wires:   wires,
		Roles: Roles{Pump: l.Role(rig.RolePump), Gate: l.Role(rig.RoleGate), Vent: l.Role(rig.RoleVent),
			Scrubber: l.Role(rig.RoleScrubber), Door: l.Role(rig.RoleDoor)},
	}
	if len(zones) > 1 || zones[0].Name != rig.FurnaceName {
		s.Zones = zones
	}
	if sp := f.Spectrometer; sp != nil {
		s.Spectrometer = &SpectrometerSpec{MinIntegration: sp.MinIntegration, MaxIntegration: sp.MaxIntegration}
		s.Wires[ChannelIntegration] = sp.Wire
	}
	for _, w := range f.Internal {
		s.Internal = append(s.Internal, InternalWrite{Channel: w.Channel, Wire: w.Wire, Reason: w.Reason})
	}
	for _, o := range l.Outputs {
		s.Switches = append(s.Switches, SwitchSpec{Name: o.Name, SafeState: o.Safe})
		s.Wires[SwitchChannel(o.Name)] = f.Outputs[o.Name]
	}
	s.Switches = append(s.Switches, SwitchSpec{Name: rig.SwitchRelay, SafeState: false, InterlockOwned: true})
	s.Wires[SwitchChannel(rig.SwitchRelay)] = "gpio relay (read back on relay_fb)"
	for _, ln := range l.Lines {
		if _, ok := l.Output(ln.Valve); !ok {
			return RigSpec{}, fmt.Errorf("envelope: %s: valve %q is not an output of the layout", ln.Controller, ln.Valve)
		}
		s.Gases = append(s.Gases, GasSpec{Gas: ln.Gas, FullScale: ln.FullScale, Valve: ln.Valve, Hazard: ln.Hazard})
		s.Wires[FlowChannel(ln.Gas)] = f.Lines[ln.Gas]
	}
	for _, in := range l.Inputs {
		s.Inputs = append(s.Inputs, in.Name)
	}
	s.Inputs = append(s.Inputs, rig.InputEStop, rig.InputLeak, rig.InputRelayFB)
	return s, nil
}

// Drivable reports whether the envelope can drive a rig of layout l: one
// heated zone or several, each with its own channels, limits and
// over_temperature trip; a layout of none is refused. SpecOf calls it
// first.
func Drivable(l rig.Layout) error {
	if len(l.Zones) == 0 {
		return fmt.Errorf("the rig has no heated zone")
	}
	return nil
}
