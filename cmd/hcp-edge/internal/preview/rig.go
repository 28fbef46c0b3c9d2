package preview

import (
	"fmt"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
)

// simRig builds the simulated instruments over p, named as the agent's
// configuration names them. Only names and ranges are taken from r: no
// port, bus, socket or GPIO line of it is opened, and no driver is built.
// It returns the furnace too, for the watchdog the daemon configures.
func simRig(r rigconfig.Rig, p *plant.Plant, c *Clock, seed uint64) (envelope.Rig, *simFurnace, error) {
	f := &simFurnace{p: p, clock: c}
	er := envelope.Rig{Furnace: f, Flows: map[string]device.FlowController{}, Switches: map[string]device.Switch{},
		Inputs: map[string]device.DigitalInput{}}
	d := dio.DefaultOpts() // the coil and input map the agent's digital I/O driver uses
	for _, cs := range d.Coils {
		er.Switches[cs.Name] = &simCoil{p: p, name: cs.Name, addr: int(cs.Address), safe: cs.Safe, clock: c}
	}
	for _, in := range d.Inputs {
		er.Inputs[in.Name] = &simInput{p: p, name: in.Name, addr: int(in.Address), invert: in.Invert}
	}
	er.Switches[rigconfig.SwitchRelay] = &simRelay{p: p}
	er.Inputs[rigconfig.InputEStop] = &simPin{p: p, name: rigconfig.InputEStop, pin: plant.PinEstop, activeLow: true}
	er.Inputs[rigconfig.InputLeak] = &simPin{p: p, name: rigconfig.InputLeak, pin: plant.PinLeak, activeLow: true}
	er.Inputs[rigconfig.InputRelayFB] = &simPin{p: p, name: rigconfig.InputRelayFB, pin: plant.PinRelayFB}
	for _, m := range r.MFCs {
		fs, err := rigconfig.ParseFlow(m.FullScale)
		if err != nil {
			return envelope.Rig{}, nil, fmt.Errorf("preview: %s: %w", m.Name, err)
		}
		if _, ok := p.MFC(m.Gas); !ok {
			return envelope.Rig{}, nil, fmt.Errorf("preview: %s: the simulator has no %s line", m.Name, m.Gas)
		}
		er.Flows[m.Gas] = &simMFC{p: p, clock: c, name: m.Name, gas: m.Gas, fullScale: fs}
	}
	er.Gauge = &simGauge{p: p, clock: c, name: nameOr(r.Gauge.Name, "gauge")}
	er.Spectrometer = &simSpectrometer{p: p, clock: c, name: nameOr(r.Raman.Name, "raman"), seed: seed}
	return er, f, nil
}

func nameOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
