// Package commission checks a newly connected rig's wiring, the day a
// technician connects it: WriteCheck drives each on/off output of the
// layout to its other level and back, confirming each by read-back, under
// conditions that keep the check from moving anything hazardous: the daemon
// stopped and an operator named (else nothing is written), then, each a
// move toward safe, the interlock relay de-energised (no gas valve can
// open), the heater turned off and every non-inert gas line's flow set to
// zero, each confirmed before any output is toggled.
// It reports which outputs it could confirm and which it could not.
package commission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/simgpio"
)

// ErrPrecondition: the rig is not in a state the check may write in;
// nothing was written.
var ErrPrecondition = errors.New("commission: precondition not met")

// Output is the check of one output.
type Output struct {
	Name      string `json:"name"`
	Safe      bool   `json:"safe_level"`
	Initial   bool   `json:"initial_level"`
	Confirmed bool   `json:"confirmed"` // both levels written and read back, left as found
	Error     string `json:"error,omitempty"`
}

// Report is a write check's result.
type Report struct {
	Operator string `json:"operator"`
	At       string `json:"at"`
	// Prepared lists the moves toward safe made before the outputs.
	Prepared []string `json:"prepared"`
	Outputs  []Output `json:"outputs"`
	// Unconfirmed names the outputs whose wiring the check could not
	// confirm.
	Unconfirmed []string `json:"unconfirmed"`
}

// Opts are a write check's inputs.
type Opts struct {
	Operator      string                // who is at the rig (required)
	ControlSocket string                // the daemon's: it must not answer
	Hazards       map[string]rig.Hazard // by gas: the layout's hazard classes
	Timeout       time.Duration         // per output
}

// WriteCheck checks the preconditions, then each output of the layout in
// name order. It returns ErrPrecondition (and writes nothing) when one
// does not hold.
func WriteCheck(ctx context.Context, in *rigconfig.Instruments, o Opts) (Report, error) {
	if err := allowed(o); err != nil {
		return Report{}, err
	}
	r := Report{Operator: o.Operator, At: time.Now().UTC().Format(time.RFC3339), Unconfirmed: []string{}}
	var err error
	if r.Prepared, err = prepare(ctx, in, o); err != nil {
		return r, err
	}
	if err := preconditions(ctx, in, o); err != nil {
		return r, err
	}
	var sws []*regmap.Switch
	for _, m := range in.Modules { // every I/O module's outputs (preconditions: each answered)
		sws = append(sws, m.Switches()...)
	}
	sort.Slice(sws, func(i, j int) bool { return sws[i].String() < sws[j].String() })
	for _, sw := range sws {
		out := Output{Name: sw.String(), Safe: sw.SafeState()}
		c, cancel := context.WithTimeout(ctx, o.Timeout)
		err := func() error {
			lvl, err := sw.State(c)
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			out.Initial = lvl
			if err := sw.Set(c, !lvl); err != nil {
				_ = sw.Set(c, lvl) // put it back, whatever the module did
				return fmt.Errorf("set %v: %w", !lvl, err)
			}
			if err := sw.Set(c, lvl); err != nil {
				_ = sw.Set(c, sw.SafeState())
				return fmt.Errorf("set back %v: %w", lvl, err)
			}
			return nil
		}()
		cancel()
		if err != nil {
			out.Error = err.Error()
			r.Unconfirmed = append(r.Unconfirmed, out.Name)
		} else {
			out.Confirmed = true
		}
		r.Outputs = append(r.Outputs, out)
	}
	return r, nil
}

// allowed: an operator named and the daemon stopped; nothing is written
// otherwise.
func allowed(o Opts) error {
	var errs []error
	if o.Operator == "" {
		errs = append(errs, errors.New("--operator NAME: a technician at the rig runs the write check"))
	}
	if o.ControlSocket != "" {
		if c, err := net.DialTimeout("unix", o.ControlSocket, time.Second); err == nil {
			_ = c.Close()
			errs = append(errs, fmt.Errorf("the daemon answers on %s: stop it first (the check drives outputs directly, not through its interlock)", o.ControlSocket))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrPrecondition, errors.Join(errs...))
	}
	return nil
}

// prepare makes the moves toward safe: the relay de-energised, the heater
// off, the non-inert lines' flows at zero (each driver confirms its own).
func prepare(ctx context.Context, in *rigconfig.Instruments, o Opts) ([]string, error) {
	var done []string
	var errs []error
	if _, err := in.Relay(); err != nil { // building it de-energises it
		errs = append(errs, err)
	} else {
		done = append(done, "interlock relay de-energised")
	}
	for _, f := range in.Zones { // every zone's heater (in.Furnace is the first)
		if f == nil {
			continue
		}
		if err := f.Halt(ctx); err != nil {
			errs = append(errs, err)
		} else if len(in.Zones) > 1 {
			done = append(done, f.String()+" heater off")
		} else {
			done = append(done, "heater off")
		}
	}
	for _, m := range in.MFCs {
		if fs, err := m.ReadFlow(ctx); err == nil && o.Hazards[fs.Gas] == rig.Inert {
			continue
		}
		if err := m.Halt(ctx); err != nil {
			errs = append(errs, err)
		} else {
			done = append(done, m.String()+" flow zero, valve held")
		}
	}
	if len(errs) > 0 {
		return done, fmt.Errorf("%w: moving toward safe: %w", ErrPrecondition, errors.Join(errs...))
	}
	return done, nil
}

// preconditions: the heater disabled, the interlock relay de-energised,
// every non-inert gas line at zero flow, as read back.
func preconditions(ctx context.Context, in *rigconfig.Instruments, o Opts) error {
	var errs []error
	if in.Furnace == nil || in.DIO == nil || slices.Contains(in.Modules, nil) || slices.Contains(in.Zones, nil) {
		errs = append(errs, errors.New("the furnace controller and the I/O modules must answer"))
		return fmt.Errorf("%w: %w", ErrPrecondition, errors.Join(errs...))
	}
	for _, f := range in.Zones { // every zone's (in.Furnace is the first)
		if st, err := f.Status(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		} else if st.HeaterEnabled && len(in.Zones) == 1 {
			errs = append(errs, errors.New("the heater is enabled: turn it off first"))
		} else if st.HeaterEnabled {
			errs = append(errs, fmt.Errorf("the heater of %s is enabled: turn it off first", f))
		}
	}
	if lvl, err := in.GPIOLevel(ctx, simgpio.RelayFB); err != nil {
		errs = append(errs, fmt.Errorf("interlock relay: %w", err))
	} else if lvl {
		errs = append(errs, errors.New("the interlock relay is energised: disarm (e-stop) first, so that no gas valve can open"))
	}
	for _, m := range in.MFCs {
		fs, err := m.ReadFlow(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		if o.Hazards[fs.Gas] != rig.Inert && fs.Setpoint != 0 {
			errs = append(errs, fmt.Errorf("%s: %s (%s) setpoint %s: set it to zero first", m, fs.Gas, o.Hazards[fs.Gas], fs.Setpoint))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrPrecondition, errors.Join(errs...))
	}
	return nil
}
