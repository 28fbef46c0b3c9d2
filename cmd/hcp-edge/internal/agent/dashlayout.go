package agent

import (
	"maps"
	"slices"

	"hcp-edge/cmd/hcp-edge/internal/dashboard"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// DashboardLayout is the rig's layout for the dashboard (dashboard.Layout), from
// the configuration: the gas lines of rig.mfcs in their order, the outputs
// and inputs of rig.outputs and rig.inputs by name, the heated zones of
// rig.zones on a rig of several, and the GPIO safety
// inputs the envelope names (e-stop, leak) with the relay's read-back. An
// input's healthy level is the one a rule of the configuration asks for:
// false for the e-stop and the leak detector, true for the relay's
// read-back and a door, else the level a gas interlock requires
// (require_inputs); none otherwise.
func DashboardLayout(f rigconfig.File) dashboard.Layout {
	var l dashboard.Layout
	gasOf := map[string]string{}
	for _, m := range f.Rig.MFCs {
		l.Gases = append(l.Gases, dashboard.GasLine{Gas: m.Gas, Hazard: string(m.Hazard), Controller: m.Name, FullScale: m.FullScale, Valve: m.ValveName()})
		gasOf[m.ValveName()] = m.Gas
	}
	for _, name := range slices.Sorted(maps.Keys(f.Rig.Outputs)) {
		o := f.Rig.Outputs[name]
		l.Outputs = append(l.Outputs, dashboard.Output{Name: name, Channel: o.Channel, Safe: o.Safe, Role: o.Role, Gas: gasOf[name]})
	}
	if zs := f.Rig.ZoneEntries(); len(zs) > 1 {
		for _, z := range zs {
			l.Zones = append(l.Zones, dashboard.Zone{Name: z.Name, Controller: z.Controller})
		}
	}
	level := func(v bool) *bool { return &v }
	healthy := map[string]*bool{}
	env := f.Envelope
	for _, g := range slices.Sorted(maps.Keys(env.Interlocks.Gases)) {
		for in, v := range env.Interlocks.Gases[g].RequireInputs {
			healthy[in] = level(v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Rig.Inputs)) {
		in := f.Rig.Inputs[name]
		h := healthy[name]
		if in.Role == rigconfig.RoleDoor {
			h = level(true)
		}
		l.Inputs = append(l.Inputs, dashboard.Input{Name: name, Channel: in.Channel, Role: in.Role, Healthy: h})
	}
	for _, g := range []struct {
		name, role string
		healthy    bool
	}{{env.Inputs.EStop, "estop", false}, {env.Inputs.Leak, "leak", false}, {rigconfig.InputRelayFB, "relay feedback", true}} {
		if g.name != "" && !slices.ContainsFunc(l.Inputs, func(i dashboard.Input) bool { return i.Name == g.name }) {
			l.Inputs = append(l.Inputs, dashboard.Input{Name: g.name, Channel: "gpio", Role: g.role, Healthy: level(g.healthy)})
		}
	}
	return l
}
