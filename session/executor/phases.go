package executor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
)

// The phase code of recipe runs: one method per recipe.Kind, each
// parameterised by its resolved recipe.Phase. Every action goes through
// proc.apply (the tool pipeline and the interlock); every wait judges only
// readings taken after the action it waits on (freshness).

// ventMarginC is how far below the envelope's vent temperature limit a
// cool waits, whatever its plan says.
const ventMarginC = 5.0

// preflight adjusts the plan to the envelope it runs under — a setpoint
// above the envelope's maximum is clamped with a warning, as are a hold's
// gas flows and the Raman integration; ramp rates are clamped into the
// envelope's range; a purge flow above its maximum is refused — checks the
// safety inputs on fresh readings, and drives the rig to its start state:
// reactive gases off, vent closed, scrubber on (all safe actions). The
// adjusted plan is what the checkpoints pin.
func (r *recipeRun) preflight(ctx context.Context) error {
	rd, err := r.read(ctx, "preflight", true)
	if err != nil {
		return err
	}
	env := r.env.Rig.Envelope()
	p := r.st.Plan
	for _, ph := range p.Phases {
		switch {
		case ph.Purge != nil:
			if _, ok := r.names.valve[ph.Purge.Gas]; !ok {
				return inputErr("%s gas %q: the rig has no %s line", ph.Name, ph.Purge.Gas, ph.Purge.Gas)
			}
		case ph.Hold != nil:
			for _, f := range ph.Hold.Flows {
				if _, ok := r.names.valve[f.Gas]; !ok {
					return fmt.Errorf("%w: the rig has no %s line", ErrNotReady, f.Gas)
				}
			}
		}
	}
	if err := r.checkZones(); err != nil {
		return err
	}
	for i := range p.Phases {
		ph := &p.Phases[i]
		if ph.Ramp == nil && ph.Hold == nil {
			continue
		}
		z, _ := r.zone(ph) // checked above
		if sp, ok := param(env, z.channel("setpoint")); ok && sp.Max != nil {
			if hi, err := device.TemperatureIn(*sp.Max, sp.Unit); err == nil {
				if ph.Ramp != nil && ph.Ramp.TemperatureC > hi.Celsius() {
					r.warn(ctx, "temperature_clamped", fmt.Sprintf("%s temperature %.1f °C clamped to the envelope's maximum %.1f °C", ph.Name, ph.Ramp.TemperatureC, hi.Celsius()), nil)
					ph.Ramp.TemperatureC = hi.Celsius()
				}
				if ph.Hold != nil && ph.Hold.TemperatureC != nil && *ph.Hold.TemperatureC > hi.Celsius() {
					t := hi.Celsius()
					ph.Hold.TemperatureC = &t
				}
			}
		}
	}
	for i := range p.Phases {
		ph := &p.Phases[i]
		if ph.Hold != nil {
			for j := range ph.Hold.Flows {
				f := &ph.Hold.Flows[j]
				if fp, ok := param(env, envelope.FlowChannel(f.Gas)); ok && fp.Max != nil {
					if mx, err := device.FlowIn(*fp.Max, fp.Unit); err == nil && f.FlowSCCM > mx.SCCM() {
						r.warn(ctx, "flow_clamped", fmt.Sprintf("%s flow %g sccm clamped to the envelope's %g sccm", f.Gas, f.FlowSCCM, mx.SCCM()), nil)
						f.FlowSCCM = mx.SCCM()
					}
				}
			}
		}
		if ph.Purge != nil {
			if fp, ok := param(env, envelope.FlowChannel(ph.Purge.Gas)); ok && fp.Max != nil {
				if mx, err := device.FlowIn(*fp.Max, fp.Unit); err == nil && ph.Purge.FlowSCCM > mx.SCCM() {
					return &envelope.Violation{Rule: envelope.RuleMax, Channel: envelope.FlowChannel(ph.Purge.Gas), Limit: mx.SCCM(),
						Value: ph.Purge.FlowSCCM, Unit: "sccm", Reason: "carrier flow above the envelope's maximum"}
				}
			}
		}
		if ph.Ramp != nil {
			z, _ := r.zone(ph)
			if rp, ok := param(env, z.channel("ramp_rate")); ok {
				if rp.Max != nil {
					if mx, err := rateIn(*rp.Max, rp.Unit); err == nil && ph.Ramp.RateCPerMin > mx {
						ph.Ramp.RateCPerMin = mx
					}
				}
				if rp.Min != nil {
					if mn, err := rateIn(*rp.Min, rp.Unit); err == nil && ph.Ramp.RateCPerMin < mn {
						ph.Ramp.RateCPerMin = mn
					}
				}
			}
		}
		if ph.Measure != nil {
			if ip, ok := param(env, envelope.ChannelIntegration); ok && ip.Max != nil {
				if mx, err := durationIn(*ip.Max, ip.Unit); err == nil && ph.Measure.Integration > mx {
					r.warn(ctx, "integration_clamped", fmt.Sprintf("Raman integration %v clamped to the envelope's %v", ph.Measure.Integration, mx), nil)
					ph.Measure.Integration = mx
				}
			}
		}
	}
	if err := readyFresh(rd, env.Spec().Roles.Door, env.MaxReadingAge()); err != nil {
		return err
	}
	r.log(ctx, "info", "recipe parameters", r.parameters())
	// Reactive gases off, vent closed, scrubber on: all safe actions.
	var acts []envelope.Action
	var reactive []string // every line that is not inert, and those the envelope names
	for _, g := range env.Spec().Gases {
		if g.Hazard != rig.Inert {
			reactive = append(reactive, g.Gas)
		}
	}
	for _, g := range env.Config().ReactiveGases {
		if !slices.Contains(reactive, g) {
			reactive = append(reactive, g)
		}
	}
	for _, g := range reactive {
		if v, ok := r.names.valve[g]; ok {
			acts = append(acts, envelope.FlowAction(g, 0), envelope.SwitchAction(v, false))
		}
	}
	acts = append(acts, envelope.SwitchAction(r.names.vent, false))
	if r.names.scrubber != "" {
		acts = append(acts, envelope.SwitchAction(r.names.scrubber, true))
	}
	return r.applyAll(ctx, acts...)
}

// parameters are the log details of the plan's main parameters: the
// growth (a hold of stage material_growth) or hold temperature and time,
// each hold gas's flow, the carrier and its flow, the ramp rate and the
// Raman integration.
func (r *recipeRun) parameters() map[string]any {
	d := map[string]any{}
	for _, ph := range r.st.Plan.Phases {
		switch {
		case ph.Ramp != nil:
			d["ramp_c_per_min"] = ph.Ramp.RateCPerMin
		case ph.Purge != nil:
			if _, ok := d["carrier"]; !ok {
				d["carrier"], d["carrier_sccm"] = ph.Purge.Gas, ph.Purge.FlowSCCM
			}
		case ph.Hold != nil:
			prefix := "hold"
			if ph.Stage == "material_growth" {
				prefix = "growth"
			}
			if ph.Hold.TemperatureC != nil {
				d[prefix+"_temperature_c"] = *ph.Hold.TemperatureC
			}
			d[prefix+"_seconds"] = ph.Hold.Duration.Seconds()
			for _, f := range ph.Hold.Flows {
				d[strings.ToLower(f.Gas)+"_sccm"] = f.FlowSCCM
			}
		case ph.Measure != nil:
			d["integration_ms"] = ph.Measure.Integration.Milliseconds()
		}
	}
	return d
}

// leakCheck isolates the chamber, measures its rate of rise over the hold,
// fails above the plan's maximum, and pumps down again.
func (r *recipeRun) leakCheck(ctx context.Context, ph *recipe.Phase) error {
	lc := ph.LeakCheck
	m, err := leakRate(ctx, &r.proc, r.names, ph.Name, lc.Hold)
	if err != nil {
		return err
	}
	r.st.LeakRatePaMin = m.Rate
	r.log(ctx, "info", "leak check", m.details())
	if m.Rate > lc.MaxRatePaPerMin {
		return fmt.Errorf("%w: leak check failed: rate of rise %.3g Pa/min above %g Pa/min", ErrCondition, m.Rate, lc.MaxRatePaPerMin)
	}
	return pumpDown(ctx, &r.proc, r.names, ph.Name, lc.BasePressurePa, lc.Timeout)
}

// purge sets the gas's flow, opens its line valve and holds for the
// duration; the gas keeps flowing.
func (r *recipeRun) purge(ctx context.Context, ph *recipe.Phase) error {
	pu := ph.Purge
	if err := r.applyAll(ctx, envelope.FlowAction(pu.Gas, device.SCCM(pu.FlowSCCM)), envelope.SwitchAction(r.names.valve[pu.Gas], true)); err != nil {
		return err
	}
	return r.hold(ctx, ph.Name, pu.Duration, nil, nil)
}

// ramp sets the ramp rate and the setpoint, turns the heater on and waits
// for the furnace within the settle band, judged on readings taken after
// the heater went on.
func (r *recipeRun) ramp(ctx context.Context, ph *recipe.Phase) error {
	rp := ph.Ramp
	z, err := r.zone(ph)
	if err != nil {
		return err
	}
	r.proc.zone = z.name
	if err := r.applyAll(ctx, z.rampRate(device.KelvinPerMinute(rp.RateCPerMin)), z.setpoint(device.Celsius(rp.TemperatureC))); err != nil {
		return err
	}
	on, err := r.apply(ctx, z.heater(true))
	if err != nil {
		return err
	}
	heat := time.Duration(math.Max(rp.TemperatureC-25, 0) / rp.RateCPerMin * float64(time.Minute))
	timeout := max(rp.Timeout, heat*3/2+30*time.Minute)
	band := rp.SettleBandC
	next := r.env.Clock.Now()
	_, err = r.waitFresh(ctx, ph.Name, fmt.Sprintf("furnace within %g °C of %.1f °C", band, rp.TemperatureC),
		r.fresh(z.name+" ("+ph.Name+")", on.At, z.at), timeout,
		func(rd envelope.Readings) (bool, error) {
			f := z.reading(rd)
			if !f.HeaterEnabled {
				return false, fmt.Errorf("%w: the furnace dropped its heater during the ramp (alarms %#x)", ErrCondition, uint16(f.Alarms))
			}
			if now := r.env.Clock.Now(); !now.Before(next) {
				next = now.Add(r.env.CheckpointEvery)
				pct := 100 * math.Min(1, math.Max(0, (f.ProcessValue.Celsius()-25)/math.Max(rp.TemperatureC-25, 1)))
				_ = r.env.Sink.Emit(ctx, lifecycle.EventProgress, Progress{Stage: ph.Stage, Percent: &pct,
					Message: fmt.Sprintf("furnace at %.1f °C, working setpoint %.1f °C", f.ProcessValue.Celsius(), f.WorkingSetpoint.Celsius())})
			}
			return math.Abs(f.ProcessValue.Celsius()-rp.TemperatureC) <= band &&
				math.Abs(f.WorkingSetpoint.Celsius()-rp.TemperatureC) < 0.5, nil
		})
	return err
}

// settleBand is the settle band of the last ramp of zone before phase i
// (5 °C without one).
func (r *recipeRun) settleBand(i int, zone string) float64 {
	band := 5.0
	for j := range r.st.Plan.Phases[:i] {
		ph := &r.st.Plan.Phases[j]
		if ph.Ramp == nil || !(ph.Ramp.SettleBandC > 0) {
			continue
		}
		if z, err := r.zone(ph); err == nil && z.name == zone {
			band = ph.Ramp.SettleBandC
		}
	}
	return band
}

// holdPhase sets each gas's flow and opens its line valve, holds for what
// is left of the duration (a resumed hold goes on from its checkpoint),
// checkpointing every CheckpointEvery, and closes the gases the plan
// closes (flow to zero, line valve closed: safe actions). With a
// temperature, the furnace is judged on readings taken after the gases
// went in: its heater must stay on, and a deviation above three settle
// bands is warned once.
func (r *recipeRun) holdPhase(ctx context.Context, i int, ph *recipe.Phase) error {
	h := ph.Hold
	var since time.Time
	z, err := r.zone(ph)
	if err != nil {
		return err
	}
	r.proc.zone = z.name
	for _, f := range h.Flows {
		if err := r.applyAll(ctx, envelope.FlowAction(f.Gas, device.SCCM(f.FlowSCCM))); err != nil {
			return err
		}
	}
	for _, f := range h.Flows {
		open, err := r.apply(ctx, envelope.SwitchAction(r.names.valve[f.Gas], true))
		if err != nil {
			return err
		}
		since = open.At
	}
	var j *judged
	if h.TemperatureC != nil {
		if since.IsZero() {
			since = z.reading(r.env.Rig.Readings(ctx)).At
		}
		want, band := *h.TemperatureC, r.settleBand(i, z.name)
		warned := false
		j = &judged{freshness: r.fresh(z.name+" ("+ph.Name+")", since, z.at), check: func(rd envelope.Readings) error {
			f := z.reading(rd)
			if !f.HeaterEnabled {
				return fmt.Errorf("%w: the furnace dropped its heater during %s", ErrCondition, ph.Name)
			}
			if dev := math.Abs(f.ProcessValue.Celsius() - want); dev > 3*band && !warned {
				warned = true
				r.warn(ctx, "temperature_deviation", fmt.Sprintf("furnace %.1f °C during %s, %.1f °C from the setpoint", f.ProcessValue.Celsius(), ph.Name, dev), nil)
			}
			return nil
		}}
	}
	held0 := r.st.Held
	err = r.hold(ctx, ph.Name, h.Duration-held0, j, func(held time.Duration) error {
		r.st.Held = held0 + held
		if _, err := checkpoint(ctx, r.env, r, Checkpoint{Step: i, StepName: ph.Name,
			Description: fmt.Sprintf("%s: %v of %v held", ph.Name, r.st.Held.Round(time.Second), h.Duration), Resumable: true}); err != nil {
			return err
		}
		pct := 100 * r.st.Held.Seconds() / h.Duration.Seconds()
		return r.emit(ctx, lifecycle.EventProgress, Progress{Stage: ph.Stage, Percent: &pct,
			Message: fmt.Sprintf("%s: %v of %v", ph.Name, r.st.Held.Round(time.Second), h.Duration)})
	})
	if err != nil {
		return err
	}
	r.st.Held = h.Duration
	var acts []envelope.Action
	for _, g := range h.Close {
		acts = append(acts, envelope.FlowAction(g, 0), envelope.SwitchAction(r.names.valve[g], false))
	}
	return r.applyAll(ctx, acts...)
}

// cool keeps the flowing gases on for the purge, turns the heater off,
// waits for the furnace at or below the plan's target (never above the
// envelope's vent limit less ventMarginC), then closes the gases still
// flowing and waits until the readings show every gas off.
func (r *recipeRun) cool(ctx context.Context, ph *recipe.Phase) error {
	c := ph.Cool
	z, err := r.zone(ph)
	if err != nil {
		return err
	}
	r.proc.zone = z.name
	if err := r.hold(ctx, ph.Name, c.Purge, nil, nil); err != nil { // purge the reactive gas out
		return err
	}
	off, err := r.apply(ctx, z.heater(false))
	if err != nil {
		return err
	}
	limit := 80.0
	if v := r.env.Rig.Envelope().Config().Vent; v != nil && v.MaxTemperature.Unit != "" {
		if t, err := device.TemperatureIn(v.MaxTemperature.Value, v.MaxTemperature.Unit); err == nil {
			limit = t.Celsius()
		}
	}
	target := math.Min(c.BelowC, limit-ventMarginC)
	if _, err := r.waitFresh(ctx, ph.Name, fmt.Sprintf("furnace below %.1f °C", target), r.fresh(z.name+" ("+ph.Name+")", off.At, z.at), c.Timeout,
		func(rd envelope.Readings) (bool, error) {
			f := z.reading(rd)
			return f.Alarms&device.AlarmSensorBreak == 0 && device.Finite(float64(f.ProcessValue)) && f.ProcessValue.Celsius() <= target, nil
		}); err != nil {
		return err
	}
	since := off.At
	for _, g := range c.Close {
		if err := r.applyAll(ctx, envelope.FlowAction(g, 0)); err != nil {
			return err
		}
		closed, err := r.apply(ctx, envelope.SwitchAction(r.names.valve[g], false))
		if err != nil {
			return err
		}
		since = closed.At
	}
	return gasesOff(ctx, &r.proc, r.names, ph.Name, since)
}

// vent isolates the pump, opens the vent valve, waits for the pressure on
// gauge readings taken after the vent opened, and closes the vent valve.
func (r *recipeRun) vent(ctx context.Context, ph *recipe.Phase) error {
	n, v := r.names, ph.Vent
	if err := r.applyAll(ctx, envelope.SwitchAction(n.gate, false), envelope.SwitchAction(n.pump, false)); err != nil {
		return err
	}
	open, err := r.apply(ctx, envelope.SwitchAction(n.vent, true))
	if err != nil {
		return err
	}
	if _, err := r.waitFresh(ctx, ph.Name, "atmospheric pressure", r.fresh("gauge ("+ph.Name+")", open.At, gaugeAt), v.Timeout, func(rd envelope.Readings) (bool, error) {
		pa, ok := pressurePa(rd)
		return ok && (rd.Pressure.Status == device.GaugeOverrange || pa >= v.PressurePa), nil
	}); err != nil {
		return err
	}
	return r.applyAll(ctx, envelope.SwitchAction(n.vent, false))
}

// measure acquires a Raman spectrum.
func (r *recipeRun) measure(ctx context.Context, ph *recipe.Phase) error {
	res, err := r.apply(ctx, envelope.AcquireAction(ph.Measure.Integration))
	if err != nil {
		return err
	}
	if res.Spectrum == nil {
		return fmt.Errorf("%w: the spectrometer returned no spectrum", device.ErrFrame)
	}
	r.st.Spectrum = res.Spectrum
	return nil
}
