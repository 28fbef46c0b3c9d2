package rigconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
)

// verifiers returns every built instrument that can read back its identity
// and the settings its profile depends on (device.Verifier), in a fixed
// order: the furnace, the I/O module, the MFCs, the gauge, the spectrometer.
func (in *Instruments) verifiers() []device.Verifier {
	var all []any
	if in.Furnace != nil {
		all = append(all, in.Furnace)
	}
	if in.DIO != nil {
		all = append(all, in.DIO)
	}
	for _, m := range in.MFCs {
		all = append(all, m)
	}
	if in.Gauge != nil {
		all = append(all, in.Gauge)
	}
	if in.Raman != nil {
		all = append(all, in.Raman)
	}
	var vs []device.Verifier
	for _, x := range all {
		if v, ok := x.(device.Verifier); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// Verify reads, from every instrument that can say, its identity and the
// settings its profile depends on, each within timeout, and returns every
// finding. It writes nothing to any unit. err joins the instruments that
// could not be read; a mismatch is a finding that is not OK, never an error
// here (device.MismatchError turns the findings into the refusal).
func (in *Instruments) Verify(ctx context.Context, timeout time.Duration) ([]device.Finding, error) {
	var (
		out  []device.Finding
		errs []error
	)
	for _, v := range in.verifiers() {
		c, cancel := context.WithTimeout(ctx, timeout)
		fs, err := v.Verify(c)
		cancel()
		out = append(out, fs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: identity and settings: %w", v, err))
		}
	}
	return out, errors.Join(errs...)
}
