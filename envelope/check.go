package envelope

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"hcp-edge/device"
)

// State is the history the envelope's rules need: the last accepted value of
// each channel (for rates of change) and the reactive gases (and, under
// venting_without_purge, the flammable, toxic and corrosive ones) used since
// the last purge. The Interlock owns one; it is not safe for concurrent use.
//
// The envelope's durations and rates are of the rig's process time: a
// max_rate_per_minute is per minute of the rig, a purge's min_duration is
// the rig's. A State made by NewScaledState for a simulator that runs
// faster than the wall clock (agent.time_scale) scales the elapsed time
// between its instants, which stay the wall clock's; on a real rig (scale 1)
// they are one. The recipe check's model runs on process time, so the two
// judge a recipe alike.
type State struct {
	last       map[string]stamp
	used       map[string]time.Time // tracked gas → last seen in use
	purgeStart time.Time
	lastPurge  time.Time
	scale      float64 // process seconds per second of the instants; 1: the same
}

type stamp struct {
	value float64
	at    time.Time
}

// NewState returns an empty history whose instants are the rig's own time.
func NewState() *State { return NewScaledState(1) }

// NewScaledState returns an empty history whose instants are wall clock
// instants of a rig whose process runs scale times faster (scale ≤ 0 or
// not finite: 1).
func NewScaledState(scale float64) *State {
	if !(scale > 0) || math.IsInf(scale, 0) {
		scale = 1
	}
	return &State{last: map[string]stamp{}, used: map[string]time.Time{}, scale: scale}
}

// elapsed is the process time between two instants of the history.
func (s *State) elapsed(from, to time.Time) time.Duration {
	d := to.Sub(from)
	if s == nil || s.scale == 1 {
		return d
	}
	return time.Duration(float64(d) * s.scale)
}

// Last returns the last accepted value of a channel (device units) and when.
func (s *State) Last(channel string) (float64, time.Time, bool) {
	if s == nil {
		return 0, time.Time{}, false
	}
	st, ok := s.last[channel]
	return st.value, st.at, ok
}

// UsedSincePurge lists the gases used since the last purge, sorted: the
// reactive ones, and under venting_without_purge the flammable, toxic and
// corrosive lines.
func (s *State) UsedSincePurge() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.used))
}

// LastPurge is when the last purge completed (zero if never).
func (s *State) LastPurge() time.Time { return s.lastPurge }

// Accept records an executed action at the instant at.
func (e *Envelope) Accept(s *State, a Action, at time.Time) {
	s.last[a.Channel()] = stamp{value: a.Value(), at: at}
	if g, opens := e.opensGas(a); opens && slices.Contains(e.tracked, g) {
		s.used[g] = at
	}
}

// Observe updates the history from a snapshot: a reactive gas (or one of
// venting_without_purge's lines) seen in use is marked used, and a purge held
// for the purge's minimum duration of process time clears the used set.
// Call it with every snapshot, in time order.
func (e *Envelope) Observe(s *State, r Readings) {
	allOff, known := true, true
	for _, g := range e.tracked {
		inUse, ok := e.gasInUse(g, r)
		if !ok {
			known = false
			continue
		}
		if inUse {
			s.used[g] = r.At
			allOff = false
		}
	}
	if e.purge == nil {
		return
	}
	purging := false
	if known && allOff {
		if f, ok := e.flow(e.purge.inertGas, r); ok && f >= e.purge.minInertFlow {
			purging = true
		}
		if p, ok := e.pressure(r); ok && e.purge.maxPressure > 0 && p <= e.purge.maxPressure {
			purging = true
		}
	}
	if !purging {
		s.purgeStart = time.Time{}
		return
	}
	if s.purgeStart.IsZero() || r.At.Before(s.purgeStart) {
		s.purgeStart = r.At
	}
	// A purge completes when something was used since the last one, and
	// the first time after the history began (a vent waits for it under
	// venting_without_purge: checkVent).
	if s.elapsed(s.purgeStart, r.At) >= e.purge.minDuration && (len(s.used) > 0 || s.lastPurge.IsZero()) {
		clear(s.used)
		s.lastPurge = r.At
	}
}

// fresh reports whether a reading taken at `at` may be used at r.At.
func (e *Envelope) fresh(at time.Time, r Readings) bool {
	if at.IsZero() {
		return false
	}
	age := r.At.Sub(at)
	return age <= e.maxAge && age >= -e.maxAge
}

func (e *Envelope) pressure(r Readings) (device.Pressure, bool) {
	p := r.Pressure
	if !e.fresh(p.At, r) || !device.Finite(float64(p.Pressure)) {
		return 0, false
	}
	switch p.Status {
	case device.GaugeOK, device.GaugeUnderrange, device.GaugeOverrange:
		return p.Pressure, true
	}
	return 0, false
}

func (e *Envelope) flow(gas string, r Readings) (device.Flow, bool) {
	f, ok := r.Flows[gas]
	if !ok || !e.fresh(f.At, r) || !device.Finite(float64(f.Flow)) {
		return 0, false
	}
	return f.Flow, true
}

func (e *Envelope) level(m map[string]Level, name string, r Readings) (on, ok bool) {
	l, found := m[name]
	if !found || !e.fresh(l.At, r) {
		return false, false
	}
	return l.On, true
}

// processValue is the i-th zone's temperature, if fresh and valid.
func (e *Envelope) processValue(r Readings, i int) (device.Temperature, bool) {
	f := e.zoneReading(r, i)
	if !e.fresh(f.At, r) || f.Alarms&device.AlarmSensorBreak != 0 || !device.Finite(float64(f.ProcessValue)) {
		return 0, false
	}
	return f.ProcessValue, true
}

// gasInUse: the gas flows above the threshold or its line valve reads open.
// ok is false when a needed reading is stale.
func (e *Envelope) gasInUse(gas string, r Readings) (inUse, ok bool) {
	f, fok := e.flow(gas, r)
	v, vok := e.level(r.Switches, e.gases[gas].Valve, r)
	if (fok && f >= e.flowOn) || (vok && v) {
		return true, true
	}
	return false, fok && vok
}

// opensGas reports whether a admits a gas: a positive flow setpoint, or its
// line valve opened.
func (e *Envelope) opensGas(a Action) (string, bool) {
	switch a.Kind {
	case ActFlow:
		return a.Target, a.Flow > 0
	case ActSwitch:
		g, ok := e.gasOfValve[a.Target]
		return g, ok && a.On
	}
	return "", false
}

// IsSafe reports whether a drives an output towards its halted state (heater
// off, flow zero, a switch to its safe level). Safe actions are allowed
// whatever the readings, and while the interlock is latched.
func (e *Envelope) IsSafe(a Action) bool {
	switch a.Kind {
	case ActHeater:
		return !a.On
	case ActFlow:
		return a.Flow == 0
	case ActSwitch:
		sw, ok := e.switches[a.Target]
		return ok && !sw.InterlockOwned && a.On == sw.SafeState
	}
	return false
}

//go:noinline
func violation(rule Rule, ch string, format string, args ...any) *Violation {
	return &Violation{Rule: rule, Channel: ch, Reason: fmt.Sprintf(format, args...)}
}

//go:noinline
func stale(ch, what string) *Violation {
	return violation(RuleStale, ch, "no fresh, valid reading of %s: refused rather than guessed", what)
}

// Check decides whether a may be executed given the snapshot r and the
// history s (nil: no history, rates of change unchecked). It returns nil or
// a *Violation naming the rule, the limit and the value. It is pure: it
// changes nothing, and r.At is "now".
func (e *Envelope) Check(a Action, r Readings, s *State) error {
	if v := e.check(a, r, s); v != nil {
		return v
	}
	return nil
}

func (e *Envelope) check(a Action, r Readings, s *State) *Violation {
	ch := a.Channel()
	k, _, _, writable, known := e.spec.channel(ch)
	if !known || !writable || kindOf(a.Kind) != k {
		return violation(RuleUnknownChannel, ch, "the rig has no writable channel %q", ch)
	}
	if a.Kind == ActSwitch && e.switches[a.Target].InterlockOwned {
		return violation(RuleInterlockOwned, ch, "the interlock relay is driven only by Arm and the halt paths")
	}
	if !device.Finite(a.Value()) {
		return violation(RuleNotFinite, ch, "requested value is not a finite number")
	}
	if e.IsSafe(a) {
		return nil
	}
	if l := e.limits[ch]; l != nil {
		if v := l.check(a.Value(), r.At, s); v != nil {
			return v
		}
	}
	switch a.Kind {
	case ActHeater:
		return e.checkHeater(ch, r)
	case ActSetpoint:
		f := e.zoneReading(r, e.zoneIndex(a.Zone())) // a known channel: the zone exists
		if !e.fresh(f.At, r) || (f.HeaterEnabled && a.Temperature > f.Setpoint) {
			return e.checkHeater(ch, r)
		}
	}
	if g, opens := e.opensGas(a); opens {
		if v := e.checkGas(ch, g, r, s); v != nil {
			return v
		}
	}
	if a.Kind == ActSwitch && a.On && e.vent != nil {
		if v := e.checkVent(ch, a.Target, r, s); v != nil {
			return v
		}
	}
	if a.Kind == ActSwitch && !a.On {
		for _, g := range e.requiredBy[a.Target] {
			inUse, ok := e.gasInUse(g, r)
			if !ok {
				return stale(ch, g+" flow and line valve")
			}
			if inUse {
				return violation(RuleRequiredOutput, ch, "%s is in use and its interlock needs %s on", g, a.Target)
			}
		}
	}
	return nil
}

func kindOf(k ActionKind) kind {
	switch k {
	case ActSetpoint:
		return kindTemperature
	case ActRampRate:
		return kindRate
	case ActFlow:
		return kindFlow
	case ActAcquire:
		return kindDuration
	case ActHeater, ActSwitch:
		return kindSwitch
	}
	return 0
}

func (l *limit) check(v float64, now time.Time, s *State) *Violation {
	viol := func(rule Rule, lim float64, reason string) *Violation {
		return &Violation{Rule: rule, Channel: l.channel, Limit: display(l.kind, lim, l.unit),
			Value: display(l.kind, v, l.unit), Unit: l.unit, Reason: reason}
	}
	if v > l.max {
		return viol(RuleMax, l.max, "above the hard maximum")
	}
	if v < l.min {
		return viol(RuleMin, l.min, "below the hard minimum")
	}
	if l.rate > 0 {
		if last, at, ok := s.Last(l.channel); ok {
			minutes := s.elapsed(at, now).Minutes() // of process time
			change := math.Abs(v - last)
			if change > l.rate*max(minutes, 0)*(1+1e-9) {
				rate := math.Inf(1)
				if minutes > 0 {
					rate = change / minutes
				}
				return &Violation{Rule: RuleRate, Channel: l.channel,
					Limit: deltaFromDevice(l.kind, l.rate, l.unit), Value: deltaFromDevice(l.kind, rate, l.unit),
					Unit: l.unit + "/min",
					Reason: fmt.Sprintf("a change of %s %s in %.3g min since the last accepted value",
						fmtNum(deltaFromDevice(l.kind, change, l.unit)), l.unit, minutes)}
			}
		}
	}
	return nil
}

func (e *Envelope) checkHeater(ch string, r Readings) *Violation {
	h := e.heater
	if h == nil {
		return nil
	}
	p, pok := e.pressure(r)
	if pok && p <= h.maxPressure {
		return nil
	}
	f, fok := e.flow(h.inertGas, r)
	if fok && f >= h.minInertFlow {
		return nil
	}
	if !pok {
		return stale(ch, fmt.Sprintf("chamber pressure (and %s flow %s, below %s %s)", h.inertGas, flowText(f, fok, h.fUnit),
			fmtNum(display(kindFlow, float64(h.minInertFlow), h.fUnit)), h.fUnit))
	}
	v := &Violation{Rule: RuleHeater, Channel: ch, Limit: display(kindPressure, float64(h.maxPressure), h.pUnit),
		Value: display(kindPressure, float64(p), h.pUnit), Unit: h.pUnit}
	v.Reason = fmt.Sprintf("the chamber is neither under vacuum (≤ %s %s) nor under inert flow (%s %s, need ≥ %s %s)",
		fmtNum(v.Limit), h.pUnit, h.inertGas, flowText(f, fok, h.fUnit),
		fmtNum(display(kindFlow, float64(h.minInertFlow), h.fUnit)), h.fUnit)
	return v
}

func flowText(f device.Flow, ok bool, unit string) string {
	if !ok {
		return "unknown"
	}
	return fmtNum(display(kindFlow, float64(f), unit)) + " " + unit
}

func (e *Envelope) checkGas(ch, gas string, r Readings, s *State) *Violation {
	if g := e.gasRules[gas]; g != nil {
		p, ok := e.pressure(r)
		if !ok {
			return stale(ch, "chamber pressure")
		}
		if p > g.maxPressure {
			return &Violation{Rule: RuleGasPressure, Channel: ch,
				Limit: display(kindPressure, float64(g.maxPressure), g.pUnit),
				Value: display(kindPressure, float64(p), g.pUnit), Unit: g.pUnit,
				Reason: gas + " needs the chamber at or below the limit"}
		}
		for _, sw := range g.switches {
			on, ok := e.level(r.Switches, sw, r)
			if !ok {
				return stale(ch, sw+" read-back")
			}
			if !on {
				return violation(RuleGasSwitch, ch, "%s needs %s on", gas, sw)
			}
		}
		for _, in := range g.inputs {
			lv, ok := e.level(r.Inputs, in, r)
			if !ok {
				return stale(ch, "input "+in)
			}
			if lv != g.levels[in] {
				return violation(RuleGasInput, ch, "%s needs %s = %v", gas, in, g.levels[in])
			}
		}
		if g.hasMinTemp {
			if v := e.checkGasTemperature(ch, g, r); v != nil {
				return v
			}
		}
	}
	if e.prohibited[RuleMixing] && slices.Contains(e.reactive, gas) {
		for _, other := range e.reactive {
			if other == gas {
				continue
			}
			inUse, ok := e.gasInUse(other, r)
			if !ok {
				return stale(ch, other+" flow and line valve")
			}
			if inUse {
				return violation(RuleMixing, ch, "%s is still in use", other)
			}
			if at, used := s.usedAt(other); used {
				return violation(RuleMixing, ch, "%s was used at %s and no purge has completed since",
					other, at.Format(time.RFC3339))
			}
		}
	}
	return nil
}

// checkGasTemperature: a gas with min_temperature is admitted only with the
// heater enabled and both the setpoint and the process value at or above it.
func (e *Envelope) checkGasTemperature(ch string, g *gasRule, r Readings) *Violation {
	pv, ok := e.processValue(r, g.zone)
	if !ok {
		return stale(ch, e.zoneWhat(g.zone, "furnace temperature"))
	}
	f := e.zoneReading(r, g.zone)
	viol := func(what string, t device.Temperature) *Violation {
		return &Violation{Rule: RuleGasTemperature, Channel: ch,
			Limit: display(kindTemperature, float64(g.minTemp), g.tUnit),
			Value: display(kindTemperature, float64(t), g.tUnit), Unit: g.tUnit,
			Reason: g.gas + " needs the furnace at or above the limit: " + what}
	}
	switch {
	case !f.HeaterEnabled:
		return viol("the heater is off", pv)
	case f.Setpoint < g.minTemp:
		return viol("its setpoint is below", f.Setpoint)
	case pv < g.minTemp:
		return viol("its temperature is below", pv)
	}
	return nil
}

// zoneWhat is what, of the i-th zone: what itself on a rig of one zone,
// "zone NAME: what" on a rig of several.
//
//go:noinline
func (e *Envelope) zoneWhat(i int, what string) string {
	if len(e.zones) == 1 {
		return what
	}
	return "zone " + e.zones[i].name + ": " + what
}

// heaterOn reports whether any zone's heater reads enabled on a live
// reading.
func (e *Envelope) heaterOn(r Readings, alive func(time.Time) bool) bool {
	for i := range e.zones {
		if f := e.zoneReading(r, i); alive(f.At) && f.HeaterEnabled {
			return true
		}
	}
	return false
}

func (s *State) usedAt(gas string) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	at, ok := s.used[gas]
	return at, ok
}

func (e *Envelope) checkVent(ch, sw string, r Readings, s *State) *Violation {
	v := e.vent
	switch sw {
	case v.valve:
		// Every heated zone: air must meet none of them hot.
		for i := range e.zones {
			if !e.prohibited[RuleVentHot] {
				break
			}
			pv, ok := e.processValue(r, i)
			if !ok {
				return stale(ch, e.zoneWhat(i, "furnace temperature"))
			}
			if e.zoneReading(r, i).HeaterEnabled {
				return violation(RuleVentHot, ch, "%s is enabled", e.zoneWhat(i, "the heater"))
			}
			if pv > v.maxTemp {
				return &Violation{Rule: RuleVentHot, Channel: ch,
					Limit: display(kindTemperature, float64(v.maxTemp), v.tUnit),
					Value: display(kindTemperature, float64(pv), v.tUnit), Unit: v.tUnit,
					Reason: e.zoneWhat(i, "the furnace") + " is too hot to admit air"}
			}
		}
		if e.prohibited[RuleVentGas] {
			for _, g := range e.reactive {
				inUse, ok := e.gasInUse(g, r)
				if !ok {
					return stale(ch, g+" flow and line valve")
				}
				if inUse {
					return violation(RuleVentGas, ch, "%s is in use", g)
				}
			}
		}
		if e.prohibited[RuleVentPumping] {
			open, ok := e.level(r.Switches, v.gate, r)
			if !ok {
				return stale(ch, v.gate+" read-back")
			}
			if open {
				return violation(RuleVentPumping, ch, "%s is open to the pump", v.gate)
			}
		}
		if e.prohibited[RuleVentPurge] {
			for _, g := range e.ventPurged {
				if at, used := s.usedAt(g); used {
					return violation(RuleVentPurge, ch, "%s (%s) was in use at %s and no purge has completed since: air would meet it",
						g, e.gases[g].Hazard, at.Format(time.RFC3339))
				}
			}
			if s != nil && len(e.ventPurged) > 0 && s.lastPurge.IsZero() {
				// The history does not survive a restart: a line used and
				// closed before it is not known, so the first vent waits
				// for a purge as if every such line had been used.
				return violation(RuleVentPurge, ch, "no purge has completed since the agent started (%s: the history of their use does not survive a restart)",
					strings.Join(e.ventPurged, ", "))
			}
		}
	case v.gate:
		if e.prohibited[RuleVentPumping] {
			open, ok := e.level(r.Switches, v.valve, r)
			if !ok {
				return stale(ch, v.valve+" read-back")
			}
			if open {
				return violation(RuleVentPumping, ch, "%s is open: the chamber is venting", v.valve)
			}
		}
	}
	return nil
}

// TripEvent is one trip condition found in a snapshot.
type TripEvent struct {
	Trip      Trip
	Procedure Procedure
	Channel   string
	Limit     float64
	Value     float64
	Unit      string
	Reason    string
	At        time.Time // the instant of the snapshot the condition was found in (Readings.At)
}

// EvaluateTrips returns the trip conditions that hold in r (none: nil):
// a heated zone's process value above its <zone>.temperature max
// (furnace.temperature for the zone named furnace) or its thermocouple
// open (over_temperature; every zone, each against its own limit), the chamber over-pressurised while in process
// (over_pressure, see below), the leak input true (gas_leak_detected), the
// e-stop input true (estop), any instrument not read within CommsTimeout
// (comms_loss), and a gas in use while an output its interlock requires on
// reads off or an input it requires at a level reads the other
// (gas_interlock_lost, see below). It is pure; the monitor calls it at its
// poll rate.
//
// A vented chamber at atmosphere is the rig's idle state, and the gauge reads
// overrange there, so pressure alone does not trip. over_pressure holds, with
// a gauge reading that is OK or overrange (an overrange reading is at least
// the gauge's upper limit), when
//   - the chamber is in process (a gas in use: its flow at or above
//     flow_on_threshold or its line valve open; or the heater enabled) and
//     the pressure is above the chamber.pressure max (overrange counts as
//     above);
//   - a gas whose interlock bounds the pressure is in use above that bound
//     (e.g. a toxic line above its 10 mbar bound: vacuum lost while it flows);
//   - the heater is enabled above the heater interlock's max_pressure while
//     the inert gas flows below min_inert_flow (the heater interlock no
//     longer holds).
//
// gas_interlock_lost holds for a gas whose interlock requires outputs on
// (require_switches_on: the exhaust scrubber) or inputs at a level
// (require_inputs: exhaust_ok, door_closed) while the gas is in use (its
// flow at or above flow_on_threshold or its line valve open: what the
// interlock judges when it refuses to switch such an output off) and one of
// them reads otherwise: the scrubber's contactor tripped, the exhaust
// failed, the door opened. The interlock admits the gas only under those
// conditions; this trip closes the line when one goes by itself. The leak
// and e-stop inputs, trips of their own, are left to their trips.
//
// Readings older than CommsTimeout count as not in use here, and an output
// or input read that long ago is no evidence of a level: they raise
// comms_loss instead (whose procedure closes the lines as well).
func (e *Envelope) EvaluateTrips(r Readings) []TripEvent {
	var out []TripEvent
	add := func(t TripEvent) {
		t.Procedure = e.procedures[t.Trip]
		t.At = r.At
		out = append(out, t)
	}
	alive := func(at time.Time) bool { return !at.IsZero() && r.At.Sub(at) <= e.commsTimeout }
	commsLost := func(ch string) {
		add(TripEvent{Trip: TripCommsLoss, Channel: ch, Reason: "no reading within " + e.commsTimeout.String()})
	}

	// Every heated zone against its own limit: the over_temperature of any
	// zone runs the procedure, which halts every zone's heater.
	for i := range e.zones {
		f := e.zoneReading(r, i)
		ch := e.zones[i].temperature
		if !alive(f.At) {
			commsLost(ch)
		} else if f.Alarms&device.AlarmSensorBreak != 0 || !device.Finite(float64(f.ProcessValue)) {
			add(TripEvent{Trip: TripOverTemperature, Channel: ch, Reason: "thermocouple open: the temperature is unknown"})
		} else if l := e.zones[i].overTemp; float64(f.ProcessValue) > l.max {
			add(TripEvent{Trip: TripOverTemperature, Channel: ch, Limit: display(l.kind, l.max, l.unit),
				Value: display(l.kind, float64(f.ProcessValue), l.unit), Unit: l.unit, Reason: "process value above the limit"})
		}
	}

	// One pass over the lines, shared by comms_loss, over_pressure and
	// gas_interlock_lost: bit i of live and inUse is spec.Gases[i]'s flow
	// read within the comms timeout, and the gas in use on live readings
	// (its flow at or above flow_on_threshold, or its line valve open).
	var live, inUse uint64
	for i, g := range e.spec.Gases {
		f, fok := r.Flows[g.Gas]
		fok = fok && alive(f.At)
		if fok {
			live |= 1 << i
		}
		v, vok := r.Switches[g.Valve]
		if (fok && device.Finite(float64(f.Flow)) && f.Flow >= e.flowOn) || (vok && alive(v.At) && v.On) {
			inUse |= 1 << i
		}
	}

	if !alive(r.Pressure.At) {
		commsLost(ChannelPressure)
	} else if t, ok := e.overPressureTrip(r, alive, inUse); ok {
		add(t)
	}

	for i, g := range e.spec.Gases {
		if live&(1<<i) == 0 {
			commsLost(FlowChannel(g.Gas))
		}
	}
	for _, sw := range e.spec.Switches {
		if l, ok := r.Switches[sw.Name]; !ok || !alive(l.At) {
			commsLost(SwitchChannel(sw.Name))
		}
	}
	for _, in := range e.spec.Inputs {
		l, ok := r.Inputs[in]
		if !ok || !alive(l.At) {
			commsLost("input." + in)
			continue
		}
		if in == e.inputs.Leak && l.On {
			add(TripEvent{Trip: TripGasLeak, Channel: "input." + in, Reason: "the leak detector reports a gas leak"})
		}
		if in == e.inputs.EStop && l.On {
			add(TripEvent{Trip: TripEStop, Channel: "input." + in, Reason: "the e-stop is pressed"})
		}
	}
	for i := range e.held {
		if h := &e.held[i]; inUse&(1<<h.index) != 0 {
			if t, ok := e.gasInterlockLost(h, r, alive); ok {
				add(t)
			}
		}
	}
	return out
}

// gasInterlockLost evaluates gas_interlock_lost for one held line whose gas
// is in use on live readings: the first required output that reads off, or
// required input at the other level, on a live reading. It allocates
// nothing unless it trips (it runs at every poll while the gas is in use).
func (e *Envelope) gasInterlockLost(h *heldLine, r Readings, alive func(time.Time) bool) (TripEvent, bool) {
	for _, sw := range h.switches {
		if l, ok := r.Switches[sw]; ok && alive(l.At) && !l.On {
			return TripEvent{Trip: TripGasInterlockLost, Channel: SwitchChannel(sw),
				Reason: fmt.Sprintf("%s in use (%s) while %s, which its interlock requires on, reads off", h.gas, e.inUseText(h, r, alive), sw)}, true
		}
	}
	for _, in := range h.inputs {
		if l, ok := r.Inputs[in]; ok && alive(l.At) && l.On != h.levels[in] {
			return TripEvent{Trip: TripGasInterlockLost, Channel: "input." + in,
				Reason: fmt.Sprintf("%s in use (%s) while input %s reads %v, its interlock requires %v", h.gas, e.inUseText(h, r, alive), in, l.On, h.levels[in])}, true
		}
	}
	return TripEvent{}, false
}

// inUseText says how a held line's gas was seen in use, for a trip's reason.
func (e *Envelope) inUseText(h *heldLine, r Readings, alive func(time.Time) bool) string {
	f, fok := r.Flows[h.gas]
	flowing := fok && alive(f.At) && device.Finite(float64(f.Flow)) && f.Flow >= e.flowOn
	v, vok := r.Switches[h.valve]
	open := vok && alive(v.At) && v.On
	switch {
	case flowing && open:
		return "flowing, " + h.valve + " open"
	case flowing:
		return "flowing"
	}
	return h.valve + " open"
}

// overPressureTrip evaluates the over_pressure rules of EvaluateTrips on a live
// gauge reading; bit i of inUse is spec.Gases[i] in use.
func (e *Envelope) overPressureTrip(r Readings, alive func(time.Time) bool, inUse uint64) (TripEvent, bool) {
	p := r.Pressure
	if (p.Status != device.GaugeOK && p.Status != device.GaugeOverrange) || !device.Finite(float64(p.Pressure)) {
		return TripEvent{}, false
	}
	over := func(limit device.Pressure) bool { return p.Status == device.GaugeOverrange || p.Pressure > limit }
	ev := func(limit device.Pressure, unit, reason string) (TripEvent, bool) {
		return TripEvent{Trip: TripOverPressure, Channel: ChannelPressure, Limit: display(kindPressure, float64(limit), unit),
			Value: display(kindPressure, float64(p.Pressure), unit), Unit: unit,
			Reason: reason + " (gauge " + p.Status.String() + ")"}, true
	}
	flowOf := func(gas string) (device.Flow, bool) {
		f, ok := r.Flows[gas]
		if !ok || !alive(f.At) || !device.Finite(float64(f.Flow)) {
			return 0, false
		}
		return f.Flow, true
	}
	heater := e.heaterOn(r, alive)
	for i, g := range e.spec.Gases {
		if inUse&(1<<i) == 0 {
			continue
		}
		if rule := e.gasRules[g.Gas]; rule != nil && over(rule.maxPressure) {
			return ev(rule.maxPressure, rule.pUnit, g.Gas+" in use above its interlock pressure")
		}
	}
	if l := e.overPressure; (inUse != 0 || heater) && over(device.Pressure(l.max)) {
		what := "the heater enabled"
		if inUse != 0 {
			var gases []string
			for i, g := range e.spec.Gases {
				if inUse&(1<<i) != 0 {
					gases = append(gases, g.Gas)
				}
			}
			what = strings.Join(gases, ", ") + " in use"
		}
		return ev(device.Pressure(l.max), l.unit, "chamber pressure above the limit with "+what)
	}
	if h := e.heater; h != nil && heater && over(h.maxPressure) {
		if f, ok := flowOf(h.inertGas); !ok || f < h.minInertFlow {
			return ev(h.maxPressure, h.pUnit, fmt.Sprintf("heater enabled with the chamber neither under vacuum nor under %s flow", h.inertGas))
		}
	}
	return TripEvent{}, false
}
