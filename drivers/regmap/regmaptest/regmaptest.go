// Package regmaptest is test support for the packages that drive the
// simulated rig through the generic Modbus driver: the shipped profiles of
// the simulator's furnace controller and I/O module, and the layout of
// configs/sim.yaml (which output and input is on which channel, read by
// device/rig's loader).
package regmaptest

import (
	"fmt"
	"sort"

	"hcp-edge/configs"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
)

// Profile returns the shipped profile id (configs/profiles/<id>.yaml).
func Profile(id string) (*profile.Profile, error) {
	name := "profiles/" + id + ".yaml"
	b, ok := configs.Profiles()[name]
	if !ok {
		return nil, fmt.Errorf("regmaptest: no shipped profile %s", name)
	}
	return profile.Parse("configs/"+name, b)
}

// Simulator's profiles: configs/sim.yaml's furnace, dio, mfcs and gauge.
const (
	SimFurnaceProfile = "hcp-sim-tc"
	SimModuleProfile  = "hcp-sim-dio"
	SimMFCProfile     = "hcp-sim-mfc"
	SimGaugeProfile   = "hcp-sim-gauge"
)

// MustProfile is Profile that panics on a refused profile (the shipped
// ones are checked by drivers/profile's tests).
func MustProfile(id string) *profile.Profile {
	p, err := Profile(id)
	if err != nil {
		panic(err)
	}
	return p
}

// SimModuleOpts is configs/sim.yaml's layout of the I/O module (unit 2),
// its outputs and inputs in channel order. It panics if the embedded
// configuration does not load.
func SimModuleOpts() regmap.ModuleOpts {
	o := regmap.ModuleOpts{Name: "dio", Unit: 2}
	l := simLayout()
	sort.SliceStable(l.Outputs, func(i, j int) bool { return l.Outputs[i].Channel < l.Outputs[j].Channel })
	sort.SliceStable(l.Inputs, func(i, j int) bool { return l.Inputs[i].Channel < l.Inputs[j].Channel })
	for _, out := range l.Outputs {
		o.Outputs = append(o.Outputs, regmap.OutputSpec{Name: out.Name, Channel: out.Channel, Safe: out.Safe})
	}
	for _, in := range l.Inputs {
		o.Inputs = append(o.Inputs, regmap.InputSpec{Name: in.Name, Channel: in.Channel})
	}
	return o
}

// SimFurnace is the simulator's furnace controller (unit 1) on bus.
func SimFurnace(bus regmap.Bus) (*regmap.Controller, error) {
	p, err := Profile(SimFurnaceProfile)
	if err != nil {
		return nil, err
	}
	return regmap.NewController(bus, p, regmap.ControllerOpts{Name: "furnace", Unit: 1})
}

// SimModule is the simulator's I/O module (unit 2) on bus, laid out as
// configs/sim.yaml lays it out.
func SimModule(bus regmap.Bus) (*regmap.Module, error) {
	p, err := Profile(SimModuleProfile)
	if err != nil {
		return nil, err
	}
	return regmap.NewModule(bus, p, SimModuleOpts())
}

// SimOutputs are the module's outputs, by address.
func SimOutputs() []string {
	var out []string
	for _, o := range SimModuleOpts().Outputs {
		out = append(out, o.Name)
	}
	return out
}

// SimInputs are the module's inputs, by address.
func SimInputs() []string {
	var out []string
	for _, in := range SimModuleOpts().Inputs {
		out = append(out, in.Name)
	}
	return out
}

// SimMFC is one of configs/sim.yaml's mass-flow controllers.
type SimMFC struct {
	Gas, Name string
	UnitID    byte
	FullScale float64 // sccm
}

// SimMFCs are configs/sim.yaml's gas lines' controllers.
func SimMFCs() []SimMFC {
	var out []SimMFC
	for _, l := range simLayout().Lines {
		out = append(out, SimMFC{Gas: l.Gas, Name: l.Controller, UnitID: l.UnitID[0], FullScale: l.FullScale.SCCM()})
	}
	return out
}

// simLayout is configs/sim.yaml's rig model. It panics if the embedded
// configuration does not load.
func simLayout() rig.Layout {
	c, err := rig.Parse(configs.SimYAML)
	if err != nil {
		panic(fmt.Sprintf("regmaptest: configs/sim.yaml: %v", err))
	}
	return c.Layout()
}
