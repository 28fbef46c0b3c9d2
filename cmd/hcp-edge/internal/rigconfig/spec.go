package rigconfig

import (
	"fmt"
	"strings"

	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// Spec derives the envelope.RigSpec of r: the instrument ranges of the
// rig's drivers (the furnace controller, the gauge and the spectrometer of
// configs/rig-protocols.md, as envelope.SimRigSpec declares them), the gases
// with the full scales and line valves of the configured mass-flow
// controllers, the digital I/O module's coils with their safe levels plus the
// interlock relay, and the inputs the rig provides. The wires of the coverage
// report name the configured unit ids and units.
func Spec(r Rig) (envelope.RigSpec, error) {
	s := envelope.SimRigSpec()
	coils := dio.DefaultOpts().Coils
	s.Gases = nil
	s.Switches = nil
	s.Wires = map[string]string{}
	for k, v := range envelope.SimRigSpec().Wires {
		if !strings.HasPrefix(k, "flow.") && !strings.HasPrefix(k, "switch.") {
			s.Wires[k] = v
		}
	}
	for _, ch := range []string{envelope.ChannelSetpoint, envelope.ChannelRampRate, envelope.ChannelHeater} {
		s.Wires[ch] = strings.Replace(s.Wires[ch], "modbus unit 1", fmt.Sprintf("modbus %s unit %d", r.Furnace.Bus, r.Furnace.Unit), 1)
	}
	coilNames := map[string]bool{}
	for _, c := range coils {
		coilNames[c.Name] = true
		s.Switches = append(s.Switches, envelope.SwitchSpec{Name: c.Name, SafeState: c.Safe})
		s.Wires[envelope.SwitchChannel(c.Name)] = fmt.Sprintf("modbus %s unit %d coil %d", r.DIO.Bus, r.DIO.Unit, c.Address)
	}
	s.Switches = append(s.Switches, envelope.SwitchSpec{Name: SwitchRelay, SafeState: false, InterlockOwned: true})
	s.Wires[envelope.SwitchChannel(SwitchRelay)] = "gpio relay (read back on relay_fb)"
	for _, m := range r.MFCs {
		fs, err := ParseFlow(m.FullScale)
		if err != nil {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: %s: %w", m.Name, err)
		}
		if !coilNames[m.ValveName()] {
			return envelope.RigSpec{}, fmt.Errorf("rigconfig: %s: valve %q is not a coil of the digital I/O module", m.Name, m.ValveName())
		}
		s.Gases = append(s.Gases, envelope.GasSpec{Gas: m.Gas, FullScale: fs, Valve: m.ValveName()})
		s.Wires[envelope.FlowChannel(m.Gas)] = fmt.Sprintf("%s serial `%sS<value>` on %s", m.Name, m.UnitID, m.Port)
	}
	var inputs []string
	for _, in := range dio.DefaultOpts().Inputs {
		inputs = append(inputs, in.Name)
	}
	s.Inputs = append(inputs, InputEStop, InputLeak, InputRelayFB)
	return s, nil
}
