package recipe

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/envelope"
)

// Check judges a loaded recipe against a rig's compiled envelope and
// returns every problem at once, sorted by line (none: the recipe may be
// offered on this rig). See docs/RECIPES.md for every rule.
//
// The phases are simulated at every combination of the extremes of the
// inputs they reference (min and max of a number, integer or duration,
// every value of an enum): each action the executor would take is judged
// by the envelope's own Check, with a State (rates of change, reactive
// gases used since the last purge) and synthetic Readings that are the
// state the recipe guarantees at that point — the chamber at the pump-down's
// base pressure while pumped and at atmosphere otherwise, the furnace at the
// ramp's setpoint after a ramp and at the cool's target after a cool, the
// gases and switches as the phases left them, the safety inputs at the
// levels the interlocks require. Then the structural rules: gas lines and
// instruments on this rig, every hold and wait bounded, heating followed by
// cooling before a vent, reactive gases closed and purged before a vent,
// the order of the phases.
func Check(r *Recipe, env *envelope.Envelope) []Problem {
	c := newChecker(r, env)
	c.static()
	c.zones()
	cs, n := r.corners()
	if cs == nil {
		c.add(origin{line: r.root.Line, key: "inputs"}, RuleCorners, "the referenced inputs have %d combinations of extremes, above %d", n, MaxCorners)
	}
	for i, v := range cs {
		c.corner, c.index = v, i
		c.simulate(r.planAt(v))
	}
	return c.finish(len(cs))
}

// origin is where a problem points: a parameter or a phase.
type origin struct {
	line, col int
	key       string
}

func phaseOrigin(s *PhaseSpec) origin { return origin{line: s.Line, col: s.Column, key: s.Key} }

func paramOrigin(s *PhaseSpec, name string) origin {
	if p := s.Params[name]; p != nil {
		return origin{line: p.Line, col: p.Column, key: p.Key}
	}
	return phaseOrigin(s)
}

func flowOrigin(s *PhaseSpec, gas string) origin {
	for _, f := range s.Flows {
		if f.Gas == gas {
			return origin{line: f.Flow.Line, col: f.Flow.Column, key: f.Flow.Key}
		}
	}
	return phaseOrigin(s)
}

type found struct {
	p       Problem
	corners int    // how many corners it was found at
	last    int    // the index of the last of them
	at      values // the first corner it was found at; nil: static
}

type checker struct {
	r        *Recipe
	zoneLost bool // a phase names a zone the rig lacks, or none on a rig of several (zones)
	env      *envelope.Envelope
	cfg      envelope.Config
	spec     envelope.RigSpec
	valve    map[string]string // gas → line valve
	vent     string
	gate     string
	pump     string // the layout's pump and scrubber outputs ("" when the rig has none)
	scrubber string
	corner   values
	index    int // of the corner
	found    map[[3]any]*found
	order    [][3]any
	adds     int // problems added, repeated ones included
}

func newChecker(r *Recipe, env *envelope.Envelope) *checker {
	c := &checker{r: r, env: env, cfg: env.Config(), spec: env.Spec(), valve: map[string]string{},
		pump: env.Spec().Roles.Pump, scrubber: env.Spec().Roles.Scrubber, found: map[[3]any]*found{}}
	c.vent, c.gate = env.VentValves()
	for _, g := range c.spec.Gases {
		c.valve[g.Gas] = g.Valve
	}
	return c
}

func (c *checker) add(o origin, rule, format string, args ...any) {
	c.adds++
	k := [3]any{o.line, o.key, rule}
	if f, ok := c.found[k]; ok {
		if f.last != c.index {
			f.corners, f.last = f.corners+1, c.index
		}
		return
	}
	c.found[k] = &found{p: Problem{File: c.r.File, Line: o.line, Column: o.col, Key: o.key, Rule: rule,
		Message: fmt.Sprintf(format, args...)}, corners: 1, last: c.index, at: c.corner}
	c.order = append(c.order, k)
}

func (c *checker) finish(corners int) []Problem {
	var out []Problem
	for _, k := range c.order {
		f := c.found[k]
		if f.at != nil && f.corners < corners {
			f.p.Message += " (at the extreme " + c.describe(f.at) + ")"
		}
		out = append(out, f.p)
	}
	sort.SliceStable(out, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b Problem) int { return a.Line - b.Line }(out[i], out[j]) < 0
	})
	return out
}

// describe writes the referenced inputs of a corner.
func (c *checker) describe(v values) string {
	var parts []string
	for _, in := range c.r.referenced() {
		parts = append(parts, in.Name+" = "+show(v[in.Name], in.Unit))
	}
	return strings.Join(parts, ", ")
}

func show(x any, unit string) string {
	switch v := x.(type) {
	case float64:
		if unit != "" {
			return fmt.Sprintf("%g %s", v, unit)
		}
		return fmt.Sprintf("%g", v)
	case time.Duration:
		return isoOf(v.Seconds())
	}
	return fmt.Sprint(x)
}

func (c *checker) hasSwitch(name string) bool {
	return slices.ContainsFunc(c.spec.Switches, func(s envelope.SwitchSpec) bool { return s.Name == name && !s.InterlockOwned })
}

// needSwitch refuses phase s on a rig without the output sw, of a role.
func (c *checker) needSwitch(s *PhaseSpec, sw, role string) {
	switch {
	case sw == "":
		c.add(phaseOrigin(s), RuleRig, "this rig has no %s output (no output of the role %s in its layout)", role, role)
	case !c.hasSwitch(sw):
		c.add(phaseOrigin(s), RuleRig, "this rig has no %s output", sw)
	}
}

func (c *checker) gasNames() string {
	var gs []string
	for _, g := range c.spec.Gases {
		gs = append(gs, g.Gas)
	}
	return strings.Join(gs, ", ")
}

// static checks what does not depend on the inputs.
func (c *checker) static() {
	r := c.r
	if len(r.Phases) > 0 && r.Phases[0].Kind != KindPreflight {
		c.add(phaseOrigin(r.Phases[0]), RuleOrder, "a recipe starts with preflight (the interlock, the safety inputs, the scrubber, reactive gases off)")
	}
	measured := false
	for _, s := range r.Phases {
		switch s.Kind {
		case KindPreflight:
			// A rig without a scrubber (no output of that role) has nothing
			// to switch on: its preflight skips the step, as the executor's
			// does. A scrubber role naming no output is the layout's error.
			if c.scrubber != "" && !c.hasSwitch(c.scrubber) {
				c.add(phaseOrigin(s), RuleRig, "preflight switches the %s on, and this rig has none", c.scrubber)
			}
		case KindPumpDown, KindLeakCheck:
			c.needSwitch(s, c.pump, rig.RolePump)
			c.needSwitch(s, c.gate, rig.RoleGate)
		case KindVent:
			c.needSwitch(s, c.pump, rig.RolePump)
			c.needSwitch(s, c.gate, rig.RoleGate)
			c.needSwitch(s, c.vent, rig.RoleVent)
		case KindHold:
			for _, f := range s.Flows {
				if _, ok := c.valve[f.Gas]; !ok {
					c.add(flowOrigin(s, f.Gas), RuleRig, "this rig has no %s gas line (lines: %s)", f.Gas, c.gasNames())
				}
			}
		case KindMeasure:
			if c.spec.Spectrometer == nil {
				c.add(phaseOrigin(s), RuleRig, "this rig has no spectrometer")
			}
			measured = true
		case KindAnalyse:
			if !measured {
				c.add(phaseOrigin(s), RuleOrder, "analyse needs a measure phase before it")
			}
		}
	}
}

// sim is the state the recipe guarantees at one point of one corner.
//
// Its clock runs on the time the executor guarantees, never more: a hold,
// a purge, a leak check's hold and an acquisition take their durations; a
// pump-down, a cool and a ramp from a furnace whose temperature is not
// known take none (the rig may be there already); a ramp from a known range
// takes the least time its settle bands allow. Rates of change and purges
// are judged on that clock, so the interlock, which counts the rig's time
// (envelope.NewScaledState), never sees less time pass than the check did.
type sim struct {
	now      time.Time
	st       *envelope.State
	*zoneSim                     // the zone the phase judged acts on (its zone:, else the rig's first)
	zones    map[string]*zoneSim // every heated zone of the rig, by name
	names    []string            // the zones' names, sorted
	first    string              // the zone read as Readings.Furnace

	pressurePa float64
	pumped     *PumpDown // the pump-down holding the chamber; nil: not pumped
	switches   map[string]bool
	flows      map[string]float64
	openedBy   map[string]*PhaseSpec
}

// zoneSim is one heated zone of the model: each zone has its own
// temperature, setpoint and heater, so a hold is compared with the last ramp
// of its own zone.
type zoneSim struct {
	pv, sp     float64 // °C: the zone as the plan puts it, and its setpoint
	pvLo, pvHi float64 // °C: the range the executor guarantees the zone within (pvHi +Inf: not known)
	heater     bool
	heatedBy   *PhaseSpec // the ramp since which the zone has not been cooled
}

func (c *checker) simulate(p *Plan) {
	s := &sim{now: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), st: envelope.NewState(), zones: map[string]*zoneSim{},
		pressurePa: 101325, switches: map[string]bool{}, flows: map[string]float64{}, openedBy: map[string]*PhaseSpec{}}
	zs := Zones(c.env)
	if len(zs) == 0 {
		zs = []string{""}
	}
	s.first, s.names = zs[0], zs
	if zl := c.spec.ZoneList(); len(zl) > 0 && slices.Contains(zs, zl[0].Name) {
		s.first = zl[0].Name // the zone whose reading is Readings.Furnace
	}
	for _, z := range zs {
		s.zones[z] = &zoneSim{pv: roomC, sp: roomC, pvLo: roomC, pvHi: math.Inf(1)}
	}
	s.zoneSim = s.zones[s.first]
	for _, sw := range c.spec.Switches {
		s.switches[sw.Name] = sw.SafeState || sw.InterlockOwned // the relay armed
	}
	c.env.Observe(s.st, c.readings(s))
	for i, ph := range p.Phases {
		c.asks(s, c.r.Phases[i])
		c.phase(s, c.r.Phases[i], ph)
	}
	for _, z := range s.names {
		if by := s.zones[z].heatedBy; by != nil {
			c.add(phaseOrigin(by), RuleVentHot, "the furnace is heated here and never cooled: add a cool phase (the cleanup drops the heater but does not wait for the furnace)")
		}
	}
}

// readings are the synthetic snapshot of s, every part read now.
func (c *checker) readings(s *sim) envelope.Readings { return c.readingsAt(s, false) }

// readingsAt is readings, with each zone at the coolest the executor
// allows it when coolest.
func (c *checker) readingsAt(s *sim, coolest bool) envelope.Readings {
	rd := envelope.Readings{At: s.now, Flows: map[string]device.FlowStatus{}, Switches: map[string]envelope.Level{},
		Inputs: map[string]envelope.Level{}}
	for name, z := range s.zones {
		pv := z.pv
		if coolest {
			pv = math.Min(z.pv, z.pvLo)
		}
		st := device.FurnaceStatus{ProcessValue: device.Celsius(pv), Setpoint: device.Celsius(z.sp),
			WorkingSetpoint: device.Celsius(z.sp), HeaterEnabled: z.heater, At: s.now}
		if name == s.first {
			rd.Furnace = st
			continue
		}
		if rd.Zones == nil {
			rd.Zones = map[string]device.FurnaceStatus{}
		}
		rd.Zones[name] = st
	}
	p := device.Pressure(s.pressurePa)
	st := device.GaugeOK
	if p >= c.spec.Gauge.Max {
		p, st = c.spec.Gauge.Max, device.GaugeOverrange
	}
	rd.Pressure = device.PressureReading{Pressure: p, Status: st, At: s.now}
	for _, g := range c.spec.Gases {
		f := device.SCCM(s.flows[g.Gas])
		rd.Flows[g.Gas] = device.FlowStatus{Gas: g.Gas, Flow: f, Setpoint: f, At: s.now}
	}
	for _, sw := range c.spec.Switches {
		rd.Switches[sw.Name] = envelope.Level{On: s.switches[sw.Name], At: s.now}
	}
	for _, in := range c.spec.Inputs {
		rd.Inputs[in] = envelope.Level{At: s.now}
	}
	for _, g := range c.cfg.Interlocks.Gases {
		for in, lv := range g.RequireInputs {
			rd.Inputs[in] = envelope.Level{On: lv, At: s.now}
		}
	}
	return rd
}

// act judges one action by the envelope, reports a refusal at o, and
// applies it to the model as if accepted (so later phases are judged too).
func (c *checker) act(s *sim, o origin, a envelope.Action) {
	rd := c.readingsAt(s, c.opens(a)) // a gas's min_temperature is judged on the coolest the executor allows
	if err := c.env.Check(a, rd, s.st); err != nil {
		var v *envelope.Violation
		if errors.As(err, &v) {
			msg := fmt.Sprintf("%s is refused by the envelope (%s)", a, v.Rule)
			if v.Unit != "" {
				msg += fmt.Sprintf(": %s %s, limit %s %s", fmtNum(v.Value), v.Unit, fmtNum(v.Limit), v.Unit)
			}
			if v.Reason != "" {
				msg += ": " + v.Reason
			}
			c.add(o, RuleEnvelopePrefix+string(v.Rule), "%s", msg)
		} else {
			c.add(o, RuleEnvelopePrefix+"error", "%s: %v", a, err)
		}
	}
	c.env.Accept(s.st, a, s.now)
	switch a.Kind {
	case envelope.ActSetpoint:
		s.sp = a.Temperature.Celsius()
	case envelope.ActHeater:
		s.heater = a.On
	case envelope.ActFlow:
		s.flows[a.Target] = a.Flow.SCCM()
	case envelope.ActSwitch:
		s.switches[a.Target] = a.On
	}
	c.env.Observe(s.st, c.readings(s))
}

// advance lets d of process time pass, observed at both ends.
func (c *checker) advance(s *sim, d time.Duration) {
	c.env.Observe(s.st, c.readings(s))
	if d > 0 {
		s.now = s.now.Add(d)
		c.env.Observe(s.st, c.readings(s))
	}
}

func fmtNum(f float64) string { return fmt.Sprintf("%.6g", f) }

func (c *checker) bounded(s *PhaseSpec, name string, d time.Duration) {
	if d <= 0 {
		c.add(paramOrigin(s, name), RuleUnbounded, "%s must be a positive duration: every hold and wait needs a finite, non-zero bound", name)
	}
}

func (c *checker) positive(s *PhaseSpec, name string, x float64) {
	if !(x > 0) {
		c.add(paramOrigin(s, name), RuleType, "must be positive, got %g", x)
	}
}

func (c *checker) pressureTarget(s *PhaseSpec, name string, pa float64) {
	lo, hi := c.spec.Gauge.Min.Pascal(), c.spec.Gauge.Max.Pascal()
	if !(pa >= lo && pa <= hi) {
		c.add(paramOrigin(s, name), RuleRig, "%g Pa lies outside the gauge's range %g .. %g Pa: the wait could never end", pa, lo, hi)
	}
}

func (c *checker) reactive(g string) bool { return slices.Contains(c.cfg.ReactiveGases, g) }

// opens reports whether a admits a gas: a flow above zero or a line valve
// opened.
func (c *checker) opens(a envelope.Action) bool {
	switch a.Kind {
	case envelope.ActFlow:
		return a.Flow > 0
	case envelope.ActSwitch:
		return a.On && slices.Contains(slices.Collect(maps.Values(c.valve)), a.Target)
	}
	return false
}

// coldGases checks that no gas whose interlock has a min_temperature is
// left open while the furnace is taken below it (to target °C; the heater
// off: -Inf): the interlock judges the opening only. A cool reports the
// reactive gases as gas_open already.
func (c *checker) coldGases(s *sim, o origin, target float64, what string) {
	cooling := math.IsInf(target, -1)
	for _, g := range slices.Sorted(maps.Keys(c.cfg.Interlocks.Gases)) {
		q := c.cfg.Interlocks.Gases[g].MinTemperature
		if q == nil || !(s.flows[g] > 0 || s.switches[c.valve[g]]) || (cooling && c.reactive(g)) {
			continue
		}
		if t, err := device.TemperatureIn(q.Value, q.Unit); err == nil && target < t.Celsius() {
			c.add(o, RuleGasCold, "%s with %s open: %s needs the furnace at or above %v (its interlock's min_temperature); close it in the hold before",
				what, c.openedText(s, []string{g}), g, *q)
		}
	}
}

// asks refuses a question asked while a reactive gas flows: the rig holds
// as it is while the question waits (up to its timeout), and a reactive gas
// is closed and purged before anyone is asked to wait.
func (c *checker) asks(s *sim, sp *PhaseSpec) {
	if len(sp.Ask) == 0 {
		return
	}
	if open := c.openReactive(s); len(open) > 0 {
		q := sp.Ask[0]
		c.add(origin{line: q.Line, col: q.Column, key: q.Key}, RuleQuestion,
			"asked while %s still flows: the rig holds as it is while a question waits; ask before a reactive gas opens or after it is closed and purged",
			c.openedText(s, open))
	}
}

func (c *checker) openReactive(s *sim) []string {
	var out []string
	for _, g := range c.cfg.ReactiveGases {
		if s.flows[g] > 0 || s.switches[c.valve[g]] {
			out = append(out, g)
		}
	}
	return out
}

func (c *checker) openedText(s *sim, gases []string) string {
	var parts []string
	for _, g := range gases {
		if by := s.openedBy[g]; by != nil {
			parts = append(parts, fmt.Sprintf("%s (opened by %s at line %d)", g, by.Name, by.Line))
		} else {
			parts = append(parts, g)
		}
	}
	return strings.Join(parts, ", ")
}

func (c *checker) phase(s *sim, sp *PhaseSpec, ph Phase) {
	po := phaseOrigin(sp)
	if z, ok := s.zones[c.zoneOf(sp)]; ok && zoned(sp.Kind) {
		s.zoneSim = z // a ramp, a hold or a cool acts on its zone's model
	}
	switch ph.Kind {
	case KindPreflight:
		for _, g := range c.cfg.ReactiveGases {
			if v, ok := c.valve[g]; ok {
				c.act(s, po, envelope.FlowAction(g, 0))
				c.act(s, po, envelope.SwitchAction(v, false))
			}
		}
		if c.hasSwitch(c.vent) {
			c.act(s, po, envelope.SwitchAction(c.vent, false))
		}
		if c.hasSwitch(c.scrubber) {
			c.act(s, po, envelope.SwitchAction(c.scrubber, true))
		}
	case KindPumpDown:
		pd := ph.PumpDown
		c.bounded(sp, "timeout", pd.Timeout)
		c.pressureTarget(sp, "base_pressure_pa", pd.BasePressurePa)
		c.pumpDown(s, po, pd)
	case KindLeakCheck:
		lc := ph.LeakCheck
		c.bounded(sp, "hold", lc.Hold)
		c.positive(sp, "max_rate_pa_per_min", lc.MaxRatePaPerMin)
		if s.pumped == nil {
			c.add(po, RuleOrder, "a leak check needs the chamber pumped down: put a pump_down before it (and no vent between)")
			return
		}
		pd := s.pumped
		if c.hasSwitch(c.gate) {
			c.act(s, po, envelope.SwitchAction(c.gate, false))
		}
		c.advance(s, lc.Hold)
		c.pumpDown(s, po, pd)
	case KindPurge:
		pu := ph.Purge
		c.bounded(sp, "duration", pu.Duration)
		c.positive(sp, "flow_sccm", pu.FlowSCCM)
		v, ok := c.valve[pu.Gas]
		if !ok {
			c.add(paramOrigin(sp, "gas"), RuleRig, "this rig has no %s gas line (lines: %s)", pu.Gas, c.gasNames())
			return
		}
		if c.reactive(pu.Gas) {
			c.add(paramOrigin(sp, "gas"), RuleReactivePurge, "%s is a reactive gas of this rig: a purge uses an inert gas", pu.Gas)
		}
		c.act(s, paramOrigin(sp, "flow_sccm"), envelope.FlowAction(pu.Gas, device.SCCM(pu.FlowSCCM)))
		c.act(s, paramOrigin(sp, "gas"), envelope.SwitchAction(v, true))
		s.openedBy[pu.Gas] = sp
		c.advance(s, pu.Duration)
	case KindRamp:
		rp := ph.Ramp
		c.positive(sp, "rate_c_per_min", rp.RateCPerMin)
		c.positive(sp, "settle_band_c", rp.SettleBandC)
		if _, given := sp.Params["timeout"]; given {
			c.bounded(sp, "timeout", rp.Timeout)
			if need := rampTime(s.pv, rp.TemperatureC-rp.SettleBandC, rp.RateCPerMin); rp.Timeout > 0 && rp.Timeout < need {
				c.add(paramOrigin(sp, "timeout"), RuleType, "%v is shorter than the ramp itself (%v from %.1f °C at %g °C/min)",
					rp.Timeout, need.Round(time.Second), s.pv, rp.RateCPerMin)
			}
		}
		c.coldGases(s, paramOrigin(sp, "temperature_c"), rp.TemperatureC, fmt.Sprintf("a ramp to %.1f °C", rp.TemperatureC))
		zn := c.zoneOf(sp)
		c.act(s, paramOrigin(sp, "rate_c_per_min"), envelope.ZoneRampRateAction(zn, device.KelvinPerMinute(rp.RateCPerMin)))
		c.act(s, paramOrigin(sp, "temperature_c"), envelope.ZoneSetpointAction(zn, device.Celsius(rp.TemperatureC)))
		c.act(s, po, envelope.ZoneHeaterAction(zn, true))
		c.advance(s, guaranteedRamp(s, rp))
		s.pv = rp.TemperatureC
		s.pvLo, s.pvHi = rp.TemperatureC-rp.SettleBandC, rp.TemperatureC+rp.SettleBandC
		if rp.TemperatureC > roomC {
			s.heatedBy = sp
		}
		c.advance(s, 0)
	case KindHold:
		h := ph.Hold
		c.bounded(sp, "duration", h.Duration)
		if h.TemperatureC != nil && !c.zoneLost { // a zone the rig lacks is reported at its zone:, its model not judged
			switch {
			case !s.heater:
				c.add(paramOrigin(sp, "temperature_c"), RuleOrder, "a hold at %.1f °C with the heater off: put a ramp before it", *h.TemperatureC)
			case math.Abs(*h.TemperatureC-s.sp) > 1e-9:
				c.add(paramOrigin(sp, "temperature_c"), RuleOrder, "%.1f °C differs from the setpoint %.1f °C the preceding ramp left: a hold does not change the temperature, a ramp does",
					*h.TemperatureC, s.sp)
			}
		}
		for _, f := range h.Flows {
			o := flowOrigin(sp, f.Gas)
			v, ok := c.valve[f.Gas]
			if !ok {
				continue // reported by static
			}
			if !(f.FlowSCCM > 0) {
				c.add(o, RuleType, "must be positive, got %g", f.FlowSCCM)
			}
			c.act(s, o, envelope.FlowAction(f.Gas, device.SCCM(f.FlowSCCM)))
			c.act(s, o, envelope.SwitchAction(v, true))
			s.openedBy[f.Gas] = sp
		}
		c.advance(s, h.Duration)
		for _, g := range h.Close {
			if v, ok := c.valve[g]; ok {
				c.act(s, po, envelope.FlowAction(g, 0))
				c.act(s, po, envelope.SwitchAction(v, false))
			}
		}
	case KindCool:
		cl := ph.Cool
		c.bounded(sp, "timeout", cl.Timeout)
		if cl.BelowC < roomC {
			c.add(paramOrigin(sp, "below_c"), RuleType, "%.1f °C is below room temperature (%g °C): the furnace may never get there", cl.BelowC, roomC)
		}
		if open := c.openReactive(s); len(open) > 0 {
			c.add(po, RuleGasOpen, "%s still open when the cool starts: a hold closes its reactive gases (leave them out of leave_open) before cooling and venting",
				c.openedText(s, open))
		}
		c.coldGases(s, po, math.Inf(-1), "cooling")
		c.advance(s, cl.Purge)
		c.act(s, po, envelope.ZoneHeaterAction(c.zoneOf(sp), false))
		s.pv = math.Min(s.pv, cl.BelowC)
		s.pvLo, s.pvHi = roomC, math.Min(s.pvHi, cl.BelowC)
		s.heatedBy = nil
		c.advance(s, 0)
		for _, g := range cl.Close {
			if v, ok := c.valve[g]; ok {
				c.act(s, po, envelope.FlowAction(g, 0))
				c.act(s, po, envelope.SwitchAction(v, false))
			}
		}
	case KindVent:
		vt := ph.Vent
		c.bounded(sp, "timeout", vt.Timeout)
		c.pressureTarget(sp, "pressure_pa", vt.PressurePa)
		structural := c.adds
		for _, zn := range s.names { // every zone: a vent does not name one
			z := s.zones[zn]
			if z.heatedBy != nil || z.heater {
				by := ""
				if z.heatedBy != nil {
					by = fmt.Sprintf(" by %s at line %d", z.heatedBy.Name, z.heatedBy.Line)
				}
				c.add(po, RuleVentHot, "venting a hot chamber: the furnace was heated%s and not cooled since; put a cool phase before the vent", by)
				z.heatedBy = nil // reported here, not again at the end
			} else if lim := c.cfg.Vent; lim != nil && lim.MaxTemperature.Unit != "" {
				if t, err := device.TemperatureIn(lim.MaxTemperature.Value, lim.MaxTemperature.Unit); err == nil && z.pv > t.Celsius() {
					c.add(po, RuleVentHot, "venting with the furnace at %.1f °C, above the rig's vent limit %.1f °C: cool further (below_c)", z.pv, t.Celsius())
				}
			}
		}
		if open := c.openReactive(s); len(open) > 0 {
			c.add(po, RuleGasOpen, "venting with %s open: close it first", c.openedText(s, open))
		} else if used := s.st.UsedSincePurge(); len(used) > 0 && c.cfg.Purge != nil {
			c.add(po, RuleNotPurged, "%s used and not purged out since (this rig's purge: %s at %v %s or more for %v): purge before venting (a purge phase, or a cool's purge)",
				strings.Join(used, ", "), c.cfg.Purge.InertGas, c.cfg.Purge.MinInertFlow.Value, c.cfg.Purge.MinInertFlow.Unit, time.Duration(c.cfg.Purge.MinDuration))
		}
		if c.adds == structural {
			for _, sw := range []string{c.gate, c.pump} {
				if c.hasSwitch(sw) {
					c.act(s, po, envelope.SwitchAction(sw, false))
				}
			}
			if c.hasSwitch(c.vent) {
				c.act(s, po, envelope.SwitchAction(c.vent, true))
			}
		} else {
			s.switches[c.gate], s.switches[c.pump], s.switches[c.vent] = false, false, true
		}
		s.pumped, s.pressurePa = nil, vt.PressurePa
		c.advance(s, 0)
		if c.hasSwitch(c.vent) {
			c.act(s, po, envelope.SwitchAction(c.vent, false))
		}
	case KindMeasure:
		if c.spec.Spectrometer != nil {
			c.act(s, paramOrigin(sp, "integration_s"), envelope.AcquireAction(ph.Measure.Integration))
		}
		c.advance(s, ph.Measure.Integration)
	case KindAnalyse:
	}
}

// guaranteedRamp is the least time the executor's ramp can take: the
// furnace must come within the settle band of the target, at the ramp's
// rate, from the range it is known to be in (none when not known: it may
// be there already).
func guaranteedRamp(s *sim, rp *Ramp) time.Duration {
	var gap float64
	switch {
	case rp.TemperatureC >= s.pv:
		gap = rp.TemperatureC - rp.SettleBandC - s.pvHi
	default:
		gap = s.pvLo - rp.TemperatureC - rp.SettleBandC
	}
	if !(gap > 0) || !(rp.RateCPerMin > 0) {
		return 0
	}
	return time.Duration(gap / rp.RateCPerMin * float64(time.Minute))
}

// pumpDown: vent closed, pump on, gate open; the chamber at the base
// pressure.
func (c *checker) pumpDown(s *sim, o origin, pd *PumpDown) {
	if c.hasSwitch(c.vent) {
		c.act(s, o, envelope.SwitchAction(c.vent, false))
	}
	if c.hasSwitch(c.pump) {
		c.act(s, o, envelope.SwitchAction(c.pump, true))
	}
	if c.hasSwitch(c.gate) {
		c.act(s, o, envelope.SwitchAction(c.gate, true))
	}
	s.pumped, s.pressurePa = pd, pd.BasePressurePa
	c.advance(s, 0)
}
