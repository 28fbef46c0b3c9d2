package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/recipe"
)

// The rig's steps every physical recipe shares: names of the rig's
// outputs, readiness of the safety inputs, pump-down, leak-rate
// measurement, gases off, and the cleanup after a failure.

// rigNames are the outputs the recipe drives, from the envelope.
type rigNames struct {
	vent, gate, pump, scrubber string
	valve                      map[string]string // gas → line valve
}

// namesOf takes the outputs from the layout's roles (the envelope's vent
// section may name the vent and gate valves itself). A role the rig lacks
// is "".
func namesOf(env *envelope.Envelope) rigNames {
	ro := env.Spec().Roles
	n := rigNames{pump: ro.Pump, scrubber: ro.Scrubber, valve: map[string]string{}}
	n.vent, n.gate = env.VentValves()
	for _, g := range env.Spec().Gases {
		n.valve[g.Gas] = g.Valve
	}
	return n
}

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// param returns the envelope parameter of a channel.
func param(env *envelope.Envelope, ch string) (envelope.Parameter, bool) {
	p, ok := env.Config().Parameters[ch]
	return p, ok
}

// Ready checks the safety inputs of a snapshot as a physical recipe's
// preflight does: e-stop released, no leak, door closed, the interlock
// relay energised (where the rig reports them), each read within maxAge
// of the snapshot (0: any reading at all). The error wraps ErrNotReady and
// names the input. The engine asks it, with the envelope's
// max_reading_age, when it recovers a physical session at start: the agent
// starts with the relay de-energised, and a session must not resume on
// an old reading of the e-stop or the leak detector.
func Ready(env *envelope.Envelope, rd envelope.Readings, maxAge time.Duration) error {
	return readyFresh(rd, env.Spec().Roles.Door, maxAge)
}

// readyFresh is ready with every input read within maxAge of the readings
// (0: any reading at all), as a preflight judges the rig by.
func readyFresh(rd envelope.Readings, door string, maxAge time.Duration) error {
	for name, want := range map[string]bool{"estop_pressed": false, "leak_detected": false, door: true, "relay_fb": true} {
		if name == "" {
			continue
		}
		l, ok := rd.Inputs[name]
		if !ok {
			continue
		}
		if l.At.IsZero() {
			return fmt.Errorf("%w: input %s not read", ErrNotReady, name)
		}
		if age := rd.At.Sub(l.At); maxAge > 0 && age > maxAge {
			return fmt.Errorf("%w: %w", ErrNotReady, &ReadingError{Reading: "input " + name,
				Reason: fmt.Sprintf("stale: read %v before the preflight (limit %v)", age.Round(time.Millisecond), maxAge)})
		}
		if l.On != want {
			return fmt.Errorf("%w: input %s is %v (the operator must arm the rig / clear it)", ErrNotReady, name, l.On)
		}
	}
	return nil
}

func rateIn(v float64, unit string) (float64, error) {
	switch unit {
	case "celsius_per_minute", "kelvin_per_minute":
		return v, nil
	case "celsius_per_second", "kelvin_per_second":
		return v * 60, nil
	}
	return 0, fmt.Errorf("unknown rate unit %q", unit)
}

func durationIn(v float64, unit string) (time.Duration, error) {
	switch unit {
	case "ms":
		return time.Duration(v * float64(time.Millisecond)), nil
	case "s":
		return time.Duration(v * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("unknown duration unit %q", unit)
}

func pressurePa(rd envelope.Readings) (float64, bool) {
	p := rd.Pressure
	if p.At.IsZero() || !device.Finite(float64(p.Pressure)) {
		return 0, false
	}
	switch p.Status {
	case device.GaugeOK, device.GaugeUnderrange, device.GaugeOverrange:
		return p.Pressure.Pascal(), true
	}
	return 0, false
}

// pumpDown closes the vent, starts the pump, opens the gate valve and waits
// for the base pressure on a gauge reading taken after the gate opened.
func pumpDown(ctx context.Context, p *proc, n rigNames, stage string, basePa float64, timeout time.Duration) error {
	if err := p.applyAll(ctx, envelope.SwitchAction(n.vent, false), envelope.SwitchAction(n.pump, true)); err != nil {
		return err
	}
	gate, err := p.apply(ctx, envelope.SwitchAction(n.gate, true))
	if err != nil {
		return err
	}
	f := p.fresh("gauge (pump-down)", gate.At, gaugeAt)
	_, err = p.waitFresh(ctx, stage, fmt.Sprintf("chamber below %g Pa", basePa), f, timeout, func(rd envelope.Readings) (bool, error) {
		pa, ok := pressurePa(rd)
		return ok && rd.Pressure.Status != device.GaugeOverrange && pa <= basePa, nil
	})
	return err
}

// gaugeAt is when a gauge reading can have been measured at the earliest:
// "taken after" an action is judged by the request, not the reply.
func gaugeAt(rd envelope.Readings) time.Time { return rd.Pressure.Requested() }

// leakMeasure is one rate-of-rise measurement: two gauge readings, both
// taken after the isolation valve closed, with their own timestamps.
type leakMeasure struct {
	Rate     float64       // Pa/min of process time
	P0, P1   float64       // Pa
	T0, T1   time.Time     // p0's reply and p1's request (the instruments' clock): the shortest interval
	Interval time.Duration // T1 − T0 in process time
}

// leakRate isolates the chamber and measures its rate of rise over hold.
// p0 is the first gauge reading taken after the gate valve read back
// closed; p1 the first taken at least hold (process time) after p0, by the
// readings' own timestamps, and the rate divides by that interval. A
// reading that does not come in time (stale), is invalid (missing), or is
// not after the one before (out of order) fails the measurement with a
// *ReadingError naming it: it never yields a rate.
func leakRate(ctx context.Context, p *proc, n rigNames, stage string, hold time.Duration) (leakMeasure, error) {
	var m leakMeasure
	iso, err := p.apply(ctx, envelope.SwitchAction(n.gate, false))
	if err != nil {
		return m, err
	}
	const r0, r1 = "gauge p0 (start of the leak-check hold)", "gauge p1 (end of the leak-check hold)"
	// Staleness ends these waits (no fresh reading within the reading age);
	// the process-time bound only has to be longer than that.
	bound := hold + p.env.Clock.Process(2*p.env.Rig.Envelope().MaxReadingAge())
	rd, err := p.waitFresh(ctx, stage, "a gauge reading after the isolation", p.fresh(r0, iso.At, gaugeAt), bound,
		func(envelope.Readings) (bool, error) { return true, nil })
	if err != nil {
		return m, err
	}
	if m.P0, err = leakPressure(rd, r0, true); err != nil {
		return m, err
	}
	m.T0 = rd.Pressure.At
	if err := p.hold(ctx, stage, hold, nil, nil); err != nil {
		return m, err
	}
	// The end of the hold by the readings' own clock: at least hold after p0.
	// Each reading was measured somewhere between its request and its reply;
	// the interval is taken at its shortest — from p0's reply to p1's request
	// — so that a slow reply (a busy host, a slow line) can only overstate
	// the rate, never hide a leak.
	rd, err = p.waitFresh(ctx, stage, "a gauge reading a hold after p0", p.fresh(r1, m.T0, gaugeAt), bound,
		func(rd envelope.Readings) (bool, error) {
			return p.env.Clock.Process(rd.Pressure.Requested().Sub(m.T0)) >= hold, nil
		})
	if err != nil {
		return m, err
	}
	if m.P1, err = leakPressure(rd, r1, false); err != nil {
		return m, err
	}
	m.T1 = rd.Pressure.Requested()
	m.Interval = p.env.Clock.Process(m.T1.Sub(m.T0))
	if !m.T1.After(m.T0) || m.Interval <= 0 {
		return m, &ReadingError{Reading: r1, Since: m.T0, Reason: fmt.Sprintf("out of order: taken at %s, not after p0",
			m.T1.UTC().Format("15:04:05.000"))}
	}
	m.Rate = (m.P1 - m.P0) / m.Interval.Minutes()
	return m, nil
}

// details are the log event's details of a measurement.
func (m leakMeasure) details() map[string]any {
	return map[string]any{"rate_pa_per_min": m.Rate, "p0_pa": m.P0, "p1_pa": m.P1,
		"p0_at": m.T0.UTC().Format(time.RFC3339Nano), "p1_at": m.T1.UTC().Format(time.RFC3339Nano),
		"interval_seconds": m.Interval.Seconds()}
}

// leakPressure is a leak-check pressure in Pa. An invalid reading (sensor
// error, not a number) is refused; so is one above the gauge's range (the
// rate would be a lower bound) and, for p0, one that is not a vacuum. Below
// the range the start pressure counts as 0, so the rate can only be
// overstated.
func leakPressure(rd envelope.Readings, name string, start bool) (float64, error) {
	pr := rd.Pressure
	pa, ok := pressurePa(rd)
	switch {
	case !ok:
		return 0, &ReadingError{Reading: name, Reason: fmt.Sprintf("invalid (gauge status %v)", pr.Status)}
	case pr.Status == device.GaugeOverrange:
		return 0, &ReadingError{Reading: name, Reason: fmt.Sprintf("above the gauge's range (%g Pa): the rate of rise cannot be measured", pa)}
	case start && pr.Status == device.GaugeUnderrange:
		return 0, nil
	}
	return pa, nil
}

// gasesOff waits until the rig's readings, taken after since (the
// interlock's clock), show every gas below the envelope's flow-on threshold
// and every line valve closed. The trip monitor judges venting by its own
// readings; venting before they confirm the gases off would race it.
func gasesOff(ctx context.Context, p *proc, n rigNames, stage string, since time.Time) error {
	env := p.env.Rig.Envelope()
	thr := 1.0
	if q := env.Config().FlowOnThreshold; q.Unit != "" {
		if f, err := device.FlowIn(q.Value, q.Unit); err == nil {
			thr = f.SCCM()
		}
	}
	_, err := p.waitUntil(ctx, stage, "every gas reading off", 10*time.Minute, func(rd envelope.Readings) (bool, error) {
		for _, g := range env.Spec().Gases {
			fs, ok := rd.Flows[g.Gas]
			if !ok || fs.At.Before(since) || !(fs.Flow.SCCM() < thr) {
				return false, nil
			}
			if l, ok := rd.Switches[n.valve[g.Gas]]; !ok || l.At.Before(since) || l.On {
				return false, nil
			}
		}
		return true, nil
	})
	return err
}

// closeCarriers purges with whatever carrier flows for purge of process
// time — at most half of what is left of ctx's deadline, so the closing
// writes always have time — then sets every non-reactive gas's flow to 0
// and closes its line valve, each with apply's retries, every one tried.
func closeCarriers(ctx context.Context, env *Env, n rigNames, purge time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		purge = min(purge, env.Clock.Process(time.Until(dl)/2))
	}
	if purge > 0 {
		_ = env.Clock.Sleep(ctx, purge) // cut short only by ctx
	}
	reactive := env.Rig.Envelope().Config().ReactiveGases
	p := &proc{env: env}
	var errs []error
	for _, g := range env.Rig.Envelope().Spec().Gases {
		if slices.Contains(reactive, g.Gas) {
			continue
		}
		acts := []envelope.Action{envelope.FlowAction(g.Gas, 0)}
		if v, ok := n.valve[g.Gas]; ok && v != "" {
			acts = append(acts, envelope.SwitchAction(v, false))
		}
		for _, a := range acts {
			if _, err := p.apply(ctx, a); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func cleanupReactive(ctx context.Context, env *Env, n rigNames) error {
	var acts []envelope.Action
	for _, z := range recipe.Zones(env.Rig.Envelope()) { // every heated zone's heater off
		acts = append(acts, envelope.ZoneHeaterAction(z, false))
	}
	for _, g := range env.Rig.Envelope().Config().ReactiveGases {
		acts = append(acts, envelope.FlowAction(g, 0))
		if v, ok := n.valve[g]; ok {
			acts = append(acts, envelope.SwitchAction(v, false))
		}
	}
	// Every action is tried (an error does not stop the others), each with
	// apply's retries: a cleanup write the instrument did not answer in
	// time must not leave a gas line open.
	p := &proc{env: env}
	var errs []error
	for _, a := range acts {
		if _, err := p.apply(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateOutputs checks outputs against the capability's output_schema and
// the caller's expected_output.
func validateOutputs(c *capability.Capability, outputs map[string]any, exp *ExpectedOutput) error {
	raw, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	if err := c.ValidateOutput(raw); err != nil {
		return fmt.Errorf("%w: capability output_schema: %w", ErrOutputSchema, err)
	}
	// Validate the JSON form, as the caller will see it.
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	return ValidateOutputs(generic, exp)
}
