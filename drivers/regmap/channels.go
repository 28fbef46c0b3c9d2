package regmap

import (
	"context"
	"fmt"

	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/profile"
)

// Reading is one channel as commissioning reads it: the raw value, the
// engineering value, and whether it lies in the device's declared range.
type Reading struct {
	Channel string    `json:"channel"`
	Name    string    `json:"name,omitempty"` // the rig's name for it (an output or input of the layout)
	Table   string    `json:"table"`
	Address uint16    `json:"address"`
	Raw     int64     `json:"raw"`
	Value   float64   `json:"value"`
	Unit    string    `json:"unit,omitempty"`
	Range   []float64 `json:"range,omitempty"`
	InRange bool      `json:"in_range"`
	Error   string    `json:"error,omitempty"`
}

// readChannels reads every channel of p on unit (registers batched by
// spans as the monitor reads them, bits one read per table span) and
// decodes each; a read that fails marks its channels with the error.
func readChannels(ctx context.Context, bus Bus, unit byte, p *profile.Profile, name string) []Reading {
	byTable := map[modbus.Table][]modbus.RegisterSpec{}
	var mapped []modbus.RegisterSpec
	for _, ch := range p.Channels {
		s := ch.Register()
		byTable[s.Table] = append(byTable[s.Table], s)
		mapped = append(mapped, s)
	}
	words := map[modbus.Table]map[uint16]uint16{}
	bits := map[modbus.Table]map[uint16]bool{}
	failed := map[modbus.Table]error{}
	for _, t := range []modbus.Table{modbus.Input, modbus.Holding} {
		got, err := readWords(ctx, bus, unit, name, spans(t, byTable[t], mapped, p.BatchGaps))
		if err != nil {
			failed[t] = err
			continue
		}
		words[t] = got[t]
	}
	for _, t := range []modbus.Table{modbus.Coil, modbus.Discrete} {
		bits[t] = map[uint16]bool{}
		read := bus.ReadCoils
		if t == modbus.Discrete {
			read = bus.ReadDiscreteInputs
		}
		for _, sp := range spans(t, byTable[t], mapped, p.BatchGaps) {
			got, err := read(ctx, unit, sp.lo, sp.n)
			if err == nil && len(got) < int(sp.n) {
				err = fmt.Errorf("%d bits for %d", len(got), sp.n)
			}
			if err != nil {
				failed[t] = fmt.Errorf("%s: %s %d..%d: %w", name, t, sp.lo, sp.lo+sp.n-1, err)
				break
			}
			for i := range sp.n {
				bits[t][sp.lo+i] = got[i]
			}
		}
	}
	out := make([]Reading, 0, len(p.Channels))
	for _, ch := range p.Channels {
		s := ch.Register()
		r := Reading{Channel: ch.Name, Table: ch.Table, Address: s.Address, Unit: ch.Unit, Range: ch.Range}
		if err := failed[s.Table]; err != nil {
			r.Error = err.Error()
			out = append(out, r)
			continue
		}
		if s.IsBit() {
			if bits[s.Table][s.Address] {
				r.Raw, r.Value = 1, 1
			}
			r.InRange = true
			out = append(out, r)
			continue
		}
		w := make([]uint16, s.Words())
		for i := range w {
			w[i] = words[s.Table][s.Address+uint16(i)]
		}
		r.Raw, _ = s.Raw(w)
		v, err := s.Decode(w)
		if err != nil {
			r.Error = err.Error()
		}
		r.Value = v
		r.InRange = err == nil && ch.InRange(v) && (ch.Invalid == nil || r.Raw != *ch.Invalid)
		out = append(out, r)
	}
	return out
}

// ReadChannels reads every channel of the controller's profile, for
// commissioning (hcp-edge probe): read-only.
func (c *Controller) ReadChannels(ctx context.Context) []Reading {
	return readChannels(ctx, c.bus, c.o.Unit, c.p, c.o.Name)
}

// ReadChannels reads every channel of the module's profile, each named as
// the layout names it, for commissioning: read-only.
func (m *Module) ReadChannels(ctx context.Context) []Reading {
	rs := readChannels(ctx, m.bus, m.o.Unit, m.p, m.o.Name)
	names := map[string]string{}
	for _, o := range m.o.Outputs {
		names[o.Channel] = o.Name
	}
	for _, in := range m.o.Inputs {
		if names[in.Channel] == "" {
			names[in.Channel] = in.Name
		}
	}
	for i := range rs {
		rs[i].Name = names[rs[i].Channel]
	}
	return rs
}
