package regmap

import (
	"context"
	"fmt"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

var (
	_ device.Verifier = (*Controller)(nil)
	_ device.Verifier = (*Module)(nil)
)

// Verify reads the identity and every setting the controller's profile
// expects (its `expect:` list: decimal point, ramp units, ...) and compares
// each with the profile. It only reads. A mismatch is a finding that is
// not OK, naming the setting as the manual names it; err is non-nil only
// when a setting could not be read.
func (c *Controller) Verify(ctx context.Context) ([]device.Finding, error) {
	return verify(ctx, c.bus, c.o.Unit, c.o.Name, c.p)
}

// Verify reads the settings the module's profile expects (the ADAM-6052's
// outputs in plain DO mode, not pulse mode) and compares each with the
// profile; it only reads.
func (m *Module) Verify(ctx context.Context) ([]device.Finding, error) {
	return verify(ctx, m.bus, m.o.Unit, m.o.Name, m.p)
}

// verify reads each expectation of p, one register each (they are few and
// scattered; Verify runs once, at start and in probe).
func verify(ctx context.Context, bus Bus, unit byte, name string, p *profile.Profile) ([]device.Finding, error) {
	out := make([]device.Finding, 0, len(p.Expect))
	for _, e := range p.Expect {
		read := bus.ReadHoldingRegisters
		if e.ExpectTable() == "input_register" {
			read = bus.ReadInputRegisters
		}
		addr := uint16(*e.Address)
		w, err := read(ctx, unit, addr, 1)
		if err == nil && len(w) < 1 {
			err = fmt.Errorf("no word: %w", device.ErrFrame)
		}
		if err != nil {
			return out, fmt.Errorf("%s: read %s (%s %d): %w", name, e.Setting, e.ExpectTable(), addr, err)
		}
		raw := int64(w[0])
		out = append(out, device.Finding{
			Instrument: name, Setting: e.Setting,
			Found: e.Describe(raw), Expected: e.Expected(), OK: e.Accepts(raw),
		})
	}
	return out, nil
}
