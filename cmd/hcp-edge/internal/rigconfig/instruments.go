package rigconfig

import (
	"errors"

	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/envelope"
)

// Instruments are the rig's drivers (drivers/rigbuild's).
type Instruments = rigbuild.Instruments

// Names of the GPIO lines and the interlock relay (device/rig's).
const (
	InputEStop   = rig.InputEStop
	InputLeak    = rig.InputLeak
	InputRelayFB = rig.InputRelayFB
	SwitchRelay  = rig.SwitchRelay
)

// VerifyTimeout is what each instrument is allowed for Verify
// (rigbuild.VerifyTimeout).
const VerifyTimeout = rigbuild.VerifyTimeout

// Build constructs every driver of r (rigbuild.Build); it performs no
// write on the hardware.
func Build(r Rig) (*Instruments, error) {
	ps, perr := r.Profiles()
	return rigbuild.Build(r.Config, ps, perr)
}

// BuildPartial constructs every driver of r that it can and records the
// others in Unreachable (rigbuild.BuildPartial).
func BuildPartial(r Rig) *Instruments {
	ps, perr := r.Profiles()
	return rigbuild.BuildPartial(r.Config, ps, perr)
}

// InterlockRig hands the writable rig to the interlock: it needs
// StartInputs and Relay first. The outputs and inputs of every I/O module
// are the interlock's, and every heated zone's controller (the first as
// Furnace, the others in Zones by zone name).
func InterlockRig(in *Instruments) (envelope.Rig, error) {
	c := in.Config()
	if in.Furnace == nil || in.DIO == nil || in.Gauge == nil || !in.GPIOOK() || len(in.MFCs) != len(c.MFCs) {
		return envelope.Rig{}, errors.New("rigconfig: the interlock needs every instrument")
	}
	if in.EStop == nil || in.RelayOut == nil {
		return envelope.Rig{}, errors.New("rigconfig: StartInputs and Relay must run before Rig")
	}
	r := envelope.Rig{
		Furnace:  in.Furnace,
		Flows:    map[string]device.FlowController{},
		Gauge:    in.Gauge,
		Switches: map[string]device.Switch{SwitchRelay: in.RelayOut},
		Inputs: map[string]device.DigitalInput{
			InputEStop: in.EStop, InputLeak: in.Leak, InputRelayFB: in.RelayFB,
		},
	}
	if in.Raman != nil {
		r.Spectrometer = in.Raman
	}
	for i, z := range c.ZoneEntries() {
		if i >= len(in.Zones) || in.Zones[i] == nil {
			return envelope.Rig{}, errors.New("rigconfig: the interlock needs every instrument")
		}
		if i > 0 {
			if r.Zones == nil {
				r.Zones = map[string]device.TemperatureController{}
			}
			r.Zones[z.Name] = in.Zones[i]
		}
	}
	for i, m := range in.MFCs {
		r.Flows[c.MFCs[i].Gas] = m
	}
	for _, m := range in.Modules {
		if m == nil {
			return envelope.Rig{}, errors.New("rigconfig: the interlock needs every instrument")
		}
		for _, sw := range m.Switches() {
			r.Switches[sw.String()] = sw
		}
	}
	for _, name := range c.InputNames() {
		m := in.Module(c.ModuleOf(c.Inputs[name].Module))
		if m == nil {
			return envelope.Rig{}, errors.New("rigconfig: the interlock needs every instrument")
		}
		i, err := m.Input(name)
		if err != nil {
			return envelope.Rig{}, err
		}
		r.Inputs[name] = i
	}
	return r, nil
}
