package rigbuild

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"hcp-edge/device"
)

// verifiers returns every built instrument that can read back its identity
// and the settings its profile depends on (device.Verifier), in a fixed
// order: every zone's controller, every I/O module, the MFCs, every gauge
// controller, the spectrometer.
func (in *Instruments) verifiers() []device.Verifier {
	var vs []device.Verifier
	add := func(x any, built bool) {
		if v, ok := x.(device.Verifier); ok && built {
			vs = append(vs, v)
		}
	}
	for _, c := range in.Zones {
		add(c, c != nil)
	}
	for _, m := range in.Modules {
		add(m, m != nil)
	}
	for _, m := range in.MFCs {
		add(m, m != nil)
	}
	for _, g := range in.Gauges {
		add(g, g != nil)
	}
	add(in.Raman, in.Raman != nil)
	return vs
}

// VerifyTimeout is what each instrument is allowed for Verify at start and
// in probe: a gauge controller listens for a second before it asks anything
// (a unit left in continuous output announces itself only by talking), and
// a loaded Pi must not refuse a good unit for being slow.
const VerifyTimeout = 5 * time.Second

// verifyAttempts is how many times Verify asks an instrument that did not
// answer in time.
const verifyAttempts = 3

// Verify reads, from every instrument that can say, its identity and the
// settings its profile depends on, each within timeout, all at once (each
// on its own line, or queued on a shared bus by the bus's own lock), and
// returns every finding in the instruments' order. It writes nothing to any
// unit. An instrument that did not answer in time (device.ErrTimeout: a
// line's noise, or a loaded host) is asked again, its whole Verify, while
// its timeout lasts (at most verifyAttempts times): the queries only read,
// so a repeat changes nothing on the unit. err joins the instruments that
// could not be read; a mismatch is a finding that is not OK, never an error
// here (device.MismatchError turns the findings into the refusal).
func (in *Instruments) Verify(ctx context.Context, timeout time.Duration) ([]device.Finding, error) {
	return verifyAll(ctx, in.verifiers(), timeout)
}

// verifyAll is Verify of the verifiers vs.
func verifyAll(ctx context.Context, vs []device.Verifier, timeout time.Duration) ([]device.Finding, error) {
	found := make([][]device.Finding, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Add(1)
		go func() { // owned here: Verify waits for every one
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			fs, err := v.Verify(c)
			for n := 1; n < verifyAttempts && errors.Is(err, device.ErrTimeout) && c.Err() == nil; n++ {
				fs, err = v.Verify(c)
			}
			found[i] = fs
			if err != nil {
				errs[i] = fmt.Errorf("%v: identity and settings: %w", v, err)
			}
		}()
	}
	wg.Wait()
	var out []device.Finding
	for _, fs := range found {
		out = append(out, fs...)
	}
	return out, errors.Join(errs...)
}
