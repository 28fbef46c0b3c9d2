package preview

import (
	"fmt"
	"strings"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
)

// simRig builds the simulated instruments over p, named as the agent's
// configuration names them. Only names and ranges are taken from r: no
// port, bus, socket or GPIO line of it is opened, and no driver is built
// (guard_test.go keeps it so).
// It returns the furnace too, for the watchdog the daemon configures (nil
// on a plant of several zones: their controllers have none). Each heated
// zone of the configuration is a controller of its own on the plant's zone
// at its unit (simZones), the first as the Furnace.
func simRig(r rigconfig.Rig, p *plant.Plant, c *Clock, seed uint64) (envelope.Rig, *simFurnace, error) {
	f := &simFurnace{p: p, clock: c}
	er := envelope.Rig{Furnace: f, Flows: map[string]device.FlowController{}, Switches: map[string]device.Switch{},
		Inputs: map[string]device.DigitalInput{}}
	if err := simZones(r.Config, p, c, &er); err != nil {
		return envelope.Rig{}, nil, err
	}
	if p.Zones() != nil {
		f = nil // the zones' 3200s have no comms watchdog to kick
	}
	// The simulator's own coil and input maps (configs/rig-protocols.md, as
	// the agent's digital I/O driver also maps them); the safe levels are
	// the envelope's rig spec's.
	spec, err := rigconfig.Spec(r)
	if err != nil {
		return envelope.Rig{}, nil, fmt.Errorf("preview: %w", err)
	}
	safe := map[string]bool{}
	declared := map[string]bool{}
	for _, s := range spec.Switches {
		safe[s.Name], declared[s.Name] = s.SafeState, true
	}
	for addr := range plant.NumCoils {
		// The plant's rig names its coils; a coil the layout does not
		// declare is wired to nothing (coil 6 on a rig without a
		// scrubber).
		name := strings.TrimPrefix(p.CoilName(addr), "coil:")
		if !declared[name] {
			continue
		}
		er.Switches[name] = &simCoil{p: p, name: name, addr: addr, safe: safe[name], clock: c}
	}
	addrs, err := r.InputAddresses() // the layout's inputs, wired to the plant's inputs of those addresses
	if err != nil {
		return envelope.Rig{}, nil, fmt.Errorf("preview: %w", err)
	}
	for name, addr := range addrs {
		er.Inputs[name] = &simInput{p: p, name: name, addr: addr}
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
