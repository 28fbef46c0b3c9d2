package envelope

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/device"
)

func (c *compiler) parameters(e *Envelope) {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Parameters)) {
		p := c.cfg.Parameters[name]
		path := "parameters." + name
		k, lo, hi, writable, ok := c.spec.channel(name)
		if !ok {
			if c.unknownZone(path, name) {
				continue
			}
			known := c.spec.WritableChannels()
			for _, z := range c.spec.ZoneList() {
				known = append(known, ZoneChannel(z.Name, ZoneTemperature))
			}
			c.fail(path, "unknown channel (known: %s, %s)", strings.Join(known, ", "), ChannelPressure)
			continue
		}
		if k == kindSwitch {
			c.fail(path, "an on/off channel takes no numeric limit; bound it with an interlock or a prohibited action")
			continue
		}
		if p.HardLimit != nil && !*p.HardLimit {
			c.fail(path+".hard_limit", "soft limits are not enforced by the envelope: remove it or set it true")
		}
		l := &limit{channel: name, kind: k, unit: p.Unit}
		if _, err := fromDevice(k, 0, p.Unit); err != nil {
			c.fail(path+".unit", "%v", err)
			continue
		}
		conv := func(field string, v *float64) (float64, bool) {
			if v == nil {
				return 0, false
			}
			if !device.Finite(*v) {
				c.fail(path+"."+field, "not a finite number")
				return 0, false
			}
			d, _ := toDevice(k, *v, p.Unit)
			return d, true
		}
		dlo, dhi := display(k, lo, p.Unit), display(k, hi, p.Unit)
		if v, ok := conv("max", p.Max); ok {
			l.max = v
			if v > hi*(1+1e-12) {
				c.fail(path+".max", "%s %s lies beyond the device range %s .. %s %s", fmtNum(*p.Max), p.Unit, fmtNum(dlo), fmtNum(dhi), p.Unit)
			}
		} else {
			c.fail(path+".max", "missing: %s is unlimited", name)
			continue
		}
		if v, ok := conv("min", p.Min); ok {
			l.min, l.hasMin = v, true
			if v < lo*(1-1e-12)-1e-12 {
				c.fail(path+".min", "%s %s lies below the device range %s .. %s %s", fmtNum(*p.Min), p.Unit, fmtNum(dlo), fmtNum(dhi), p.Unit)
			}
			if v > l.max {
				c.fail(path, "min %s above max %s", fmtNum(*p.Min), fmtNum(*p.Max))
			}
		} else {
			l.min = lo // the device range bounds it from below
		}
		if p.MaxRatePerMinute != nil {
			if !writable {
				c.fail(path+".max_rate_per_minute", "a read-only channel takes no rate limit")
			} else if r := *p.MaxRatePerMinute; !device.Finite(r) || r <= 0 {
				c.fail(path+".max_rate_per_minute", "must be positive")
			} else {
				l.rate, _ = deltaToDevice(k, r, p.Unit)
			}
		}
		switch zn, what, _ := strings.Cut(name, "."); {
		case name == ChannelPressure:
			e.overPressure = l
		case what == ZoneTemperature && e.zoneIndex(zn) >= 0:
			e.zones[e.zoneIndex(zn)].overTemp = l
		default:
			e.limits[name] = l
		}
	}
	for _, z := range e.zones {
		if z.overTemp == nil {
			c.fail("parameters."+ZoneChannel(z.name, ZoneTemperature), "missing: the over_temperature trip needs a max")
		}
	}
	if e.overPressure == nil {
		c.fail("parameters."+ChannelPressure, "missing: the over_pressure trip needs a max")
	}
}

func (c *compiler) gasKnown(path, gas string) bool {
	if _, _, _, _, ok := c.spec.channel(FlowChannel(gas)); !ok {
		c.fail(path, "unknown gas %q", gas)
		return false
	}
	return true
}

func (c *compiler) interlocks(e *Envelope) {
	if h := c.cfg.Interlocks.Heater; h != nil {
		r := &heaterRule{pUnit: h.MaxPressure.Unit, inertGas: h.InertGas, fUnit: h.MinInertFlow.Unit}
		if v, ok := c.quantity("interlocks.heater.max_pressure", h.MaxPressure, kindPressure, true); ok {
			r.maxPressure = device.Pressure(v)
			if r.maxPressure > c.spec.Gauge.Max || r.maxPressure < c.spec.Gauge.Min {
				c.fail("interlocks.heater.max_pressure", "%v lies outside the gauge range", h.MaxPressure)
			}
		}
		if c.gasKnown("interlocks.heater.inert_gas", h.InertGas) {
			if hz := e.gases[h.InertGas].Hazard; hz != "" && hz != rig.Inert {
				c.fail("interlocks.heater.inert_gas", "%s is %s in the rig's layout (its hazard class), not inert", h.InertGas, hz)
			}
			if v, ok := c.quantity("interlocks.heater.min_inert_flow", h.MinInertFlow, kindFlow, true); ok {
				r.minInertFlow = device.Flow(v)
				if fs := e.gases[h.InertGas].FullScale; r.minInertFlow > fs || r.minInertFlow <= 0 {
					c.fail("interlocks.heater.min_inert_flow", "%v lies outside 0 .. %v (the %s controller's range)", h.MinInertFlow, fs, h.InertGas)
				}
			}
		}
		e.heater = r
	}
	for _, gas := range slices.Sorted(maps.Keys(c.cfg.Interlocks.Gases)) {
		g := c.cfg.Interlocks.Gases[gas]
		path := "interlocks.gases." + gas
		if !c.gasKnown(path, gas) {
			continue
		}
		r := &gasRule{gas: gas, pUnit: g.MaxPressure.Unit, levels: map[string]bool{}}
		if v, ok := c.quantity(path+".max_pressure", g.MaxPressure, kindPressure, true); ok {
			r.maxPressure = device.Pressure(v)
			if r.maxPressure > c.spec.Gauge.Max || r.maxPressure < c.spec.Gauge.Min {
				c.fail(path+".max_pressure", "%v lies outside the gauge range", g.MaxPressure)
			}
		}
		if q := g.MinTemperature; q != nil {
			c.minTemperature(e, r, path, g.Zone, *q)
		} else if g.Zone != "" {
			c.fail(path+".zone", "names the zone of min_temperature, which is not given")
		}
		for _, sw := range g.RequireSwitchesOn {
			if s, ok := e.switches[sw]; !ok || s.InterlockOwned {
				c.fail(path+".require_switches_on", "unknown switch %q", sw)
				continue
			}
			r.switches = append(r.switches, sw)
			e.requiredBy[sw] = append(e.requiredBy[sw], gas)
		}
		for _, in := range slices.Sorted(maps.Keys(g.RequireInputs)) {
			if !e.inputSet[in] {
				c.fail(path+".require_inputs", "unknown input %q", in)
				continue
			}
			r.inputs = append(r.inputs, in)
			r.levels[in] = g.RequireInputs[in]
		}
		e.gasRules[gas] = r
	}
	for _, gas := range c.cfg.ReactiveGases {
		if c.gasKnown("reactive_gases", gas) && !slices.Contains(e.reactive, gas) {
			e.reactive = append(e.reactive, gas)
		}
	}
	sort.Strings(e.reactive)
}

// minTemperature compiles a gas interlock's min_temperature, judged on
// the zone it names (zone:, required on a rig of several zones; the only
// zone else): within that zone's setpoint range and at or below its hard
// limit, else the gas could never be admitted (or always).
func (c *compiler) minTemperature(e *Envelope, r *gasRule, path, zn string, q Quantity) {
	i := 0
	switch {
	case zn != "":
		if i = e.zoneIndex(zn); i < 0 {
			c.noZone(path+".zone", zn)
			return
		}
	case len(e.zones) > 1:
		c.fail(path+".zone", "missing: the rig has %d heated zones (%s); name the one min_temperature judges", len(e.zones), strings.Join(c.spec.ZoneNames(), ", "))
		return
	case len(e.zones) == 0:
		return // reported by checkZones
	}
	path += ".min_temperature"
	v, ok := c.quantity(path, q, kindTemperature, true)
	if !ok {
		return
	}
	z := e.zones[i]
	r.minTemp, r.hasMinTemp, r.tUnit, r.zone = device.Temperature(v), true, q.Unit, i
	hi := float64(z.spec.SetpointMax)
	if l := e.limits[ZoneChannel(z.name, ZoneSetpoint)]; l != nil {
		hi = l.max
	}
	if v <= float64(z.spec.SetpointMin) || v > hi {
		c.fail(path, "%v lies outside the furnace's setpoint range up to its hard limit: %s could never be admitted, or always", q, r.gas)
	}
}

func (c *compiler) prohibitedActions(e *Envelope) {
	for _, name := range c.cfg.ProhibitedActions {
		r := Rule(name)
		if !slices.Contains(prohibitedRules, r) {
			c.fail("prohibited_actions", "unknown prohibited action %q (known: %v)", name, prohibitedRules)
			continue
		}
		e.prohibited[r] = true
	}
	if e.prohibited[RuleMixing] || e.prohibited[RuleVentGas] {
		if len(e.reactive) == 0 {
			c.fail("reactive_gases", "%s and %s need the reactive gases listed", RuleMixing, RuleVentGas)
		}
	}
	// The purge definition is compiled whenever it is given, not only for the
	// mixing rule: the purge history (State.UsedSincePurge) is also what the
	// recipe check's "purged before a vent" reads, on a rig whose reactive
	// gases may mix (a hydrocarbon in H2) as on one whose may not.
	for _, r := range []Rule{RuleMixing, RuleVentPurge} {
		if e.prohibited[r] && c.cfg.Purge == nil {
			c.fail("purge", "%s needs a purge definition", r)
		}
	}
	// venting_without_purge follows the layout's hazard classes, not names:
	// a line of a flammable, toxic or corrosive gas used since the last
	// purge keeps the vent valve shut.
	e.tracked = slices.Clone(e.reactive)
	if e.prohibited[RuleVentPurge] {
		for _, g := range c.spec.Gases {
			switch g.Hazard {
			case rig.Flammable, rig.Toxic, rig.Corrosive:
				e.ventPurged = append(e.ventPurged, g.Gas)
				if !slices.Contains(e.tracked, g.Gas) {
					e.tracked = append(e.tracked, g.Gas)
				}
			}
		}
		sort.Strings(e.ventPurged)
		sort.Strings(e.tracked)
	}
	{
		p := c.cfg.Purge
		if p != nil {
			r := &purgeRule{inertGas: p.InertGas, minDuration: time.Duration(p.MinDuration)}
			if c.gasKnown("purge.inert_gas", p.InertGas) {
				if h := e.gases[p.InertGas].Hazard; h != "" && h != rig.Inert {
					c.fail("purge.inert_gas", "%s is %s in the rig's layout (its hazard class): a purge uses an inert gas", p.InertGas, h)
				} else if slices.Contains(e.reactive, p.InertGas) {
					c.fail("purge.inert_gas", "%s is listed as reactive", p.InertGas)
				}
				if v, ok := c.quantity("purge.min_inert_flow", p.MinInertFlow, kindFlow, true); ok {
					r.minInertFlow = device.Flow(v)
					if fs := e.gases[p.InertGas].FullScale; r.minInertFlow > fs || r.minInertFlow <= 0 {
						c.fail("purge.min_inert_flow", "%v lies outside 0 .. %v", p.MinInertFlow, fs)
					}
				}
			}
			if v, ok := c.quantity("purge.max_pressure", p.MaxPressure, kindPressure, false); ok {
				r.maxPressure = device.Pressure(v)
			}
			if r.minDuration <= 0 {
				c.fail("purge.min_duration", "must be positive")
			}
			e.purge = r
		}
	}
	if e.prohibited[RuleVentHot] || e.prohibited[RuleVentGas] || e.prohibited[RuleVentPumping] || e.prohibited[RuleVentPurge] {
		v := c.cfg.Vent
		if v == nil {
			c.fail("vent", "the venting rules need the vent valve named")
			return
		}
		valve, gate := e.VentValves()
		r := &ventRule{valve: valve, gate: gate, tUnit: v.MaxTemperature.Unit}
		if s, ok := e.switches[valve]; !ok || s.InterlockOwned {
			c.fail("vent.valve", "unknown switch %q (and the layout gives no output the vent role)", valve)
		}
		if e.prohibited[RuleVentPumping] {
			if s, ok := e.switches[gate]; !ok || s.InterlockOwned || gate == valve {
				c.fail("vent.gate", "unknown switch %q (and the layout gives no output the gate role)", gate)
			}
		}
		if e.prohibited[RuleVentHot] {
			if t, ok := c.quantity("vent.max_temperature", v.MaxTemperature, kindTemperature, true); ok {
				r.maxTemp = device.Temperature(t)
			}
		}
		e.vent = r
	}
}

func (c *compiler) procedures(e *Envelope) {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.EmergencyProcedures)) {
		proc := Procedure(c.cfg.EmergencyProcedures[name])
		if !slices.Contains(Trips(), Trip(name)) {
			c.fail("emergency_procedures."+name, "unknown trip (known: %v)", Trips())
			continue
		}
		switch proc {
		case ProcImmediateShutdown, ProcCloseValvesAndAlert, ProcSafeState:
		default:
			c.fail("emergency_procedures."+name, "unknown procedure %q (known: %s, %s, %s)", proc,
				ProcImmediateShutdown, ProcCloseValvesAndAlert, ProcSafeState)
			continue
		}
		e.procedures[Trip(name)] = proc
	}
	for _, t := range Trips() {
		if _, ok := c.cfg.EmergencyProcedures[string(t)]; !ok {
			if p, optional := optionalProcedure(t); optional {
				e.procedures[t] = p
				continue
			}
			c.fail("emergency_procedures."+string(t), "missing: every trip needs a procedure")
		}
	}
	if p, ok := e.procedures[TripEStop]; ok && p != ProcSafeState {
		c.fail("emergency_procedures.estop", "must be %s, got %s", ProcSafeState, p)
	}
}

func (c *compiler) inputsAndUnrestricted(e *Envelope) {
	if !e.inputSet[c.cfg.Inputs.EStop] {
		c.fail("inputs.estop", "unknown input %q (the estop trip needs it)", c.cfg.Inputs.EStop)
	}
	if !e.inputSet[c.cfg.Inputs.Leak] {
		c.fail("inputs.leak", "unknown input %q (the gas_leak_detected trip needs it)", c.cfg.Inputs.Leak)
	}
	writable := c.spec.WritableChannels()
	for ch, why := range c.cfg.Unrestricted {
		if !slices.Contains(writable, ch) {
			if c.unknownZone("unrestricted."+ch, ch) {
				continue
			}
			c.fail("unrestricted."+ch, "not a writable channel of the rig")
			continue
		}
		if k, _, _, _, _ := c.spec.channel(ch); k != kindSwitch {
			c.fail("unrestricted."+ch, "a numeric channel cannot be unrestricted: give it a parameter")
			continue
		}
		if strings.TrimSpace(why) == "" {
			c.fail("unrestricted."+ch, "give the reason")
		}
		e.unrestricted[ch] = why
	}
}

// heldLines lists the gas lines gas_interlock_lost watches: each gas whose
// interlock requires an output on or an input at a level, with those
// outputs and inputs. An input that is a trip of its own (the leak
// detector, the e-stop) is left to its trip and its procedure.
func (c *compiler) heldLines(e *Envelope) {
	for _, gas := range slices.Sorted(maps.Keys(e.gasRules)) {
		r := e.gasRules[gas]
		i := slices.IndexFunc(c.spec.Gases, func(g GasSpec) bool { return g.Gas == gas })
		if i < 0 {
			continue // not a gas of the rig: reported by interlocks
		}
		h := heldLine{gas: gas, valve: e.gases[gas].Valve, index: i,
			switches: slices.Clone(r.switches), levels: map[string]bool{}}
		for _, in := range r.inputs {
			if in == e.inputs.Leak || in == e.inputs.EStop {
				continue
			}
			h.inputs = append(h.inputs, in)
			h.levels[in] = r.levels[in]
		}
		if len(h.switches)+len(h.inputs) > 0 {
			e.held = append(e.held, h)
		}
	}
}

// coverage refuses any writable channel that no rule bounds.
func (c *compiler) coverage(e *Envelope) {
	for _, ch := range c.spec.WritableChannels() {
		if k, _, _, _, _ := c.spec.channel(ch); k != kindSwitch && e.limits[ch] == nil {
			c.fail("channel "+ch, "writable channel has no hard limit: add parameters.%s with a max", ch)
			continue
		}
		if len(e.rulesFor(ch)) == 0 {
			c.fail("channel "+ch, "writable channel is not bounded by any rule: add a parameter or interlock, or list it under unrestricted with a reason")
		}
	}
}
