package recipe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"hcp-edge/session/capability"
)

// Plan is a recipe resolved against one task's inputs: every parameter a
// number, a duration or a name, in the order the executor runs the phases.
// It is JSON-serialisable (durations in nanoseconds) so that a checkpoint
// can pin it; its Recipe identity (name, version, sha256) is what the
// session records.
type Plan struct {
	Recipe Identity `json:"recipe"`
	// Inputs are the task's inputs with the declared defaults applied, by
	// declared (dotted) name; durations as the ISO 8601 text.
	Inputs  map[string]any `json:"inputs"`
	Phases  []Phase        `json:"phases"`
	Cleanup CleanupPlan    `json:"cleanup"`
	// Estimate is the sum of the phases' estimates; Bound the sum of their
	// bounds (the longest the phases can take before a wait times out).
	Estimate time.Duration `json:"estimate_ns"`
	Bound    time.Duration `json:"bound_ns"`
}

// Identity names a recipe exactly: every session records it.
type Identity struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"` // hex, of the recipe file's bytes
}

// Phase is one resolved phase. Exactly the parameter struct of its Kind is
// set (Preflight has none).
type Phase struct {
	Kind        Kind   `json:"kind"`
	Name        string `json:"name"`  // display name, e.g. "grow"
	Stage       string `json:"stage"` // progress stage, e.g. "material_growth"
	Description string `json:"description"`
	// Zone is the heated zone a ramp, a hold or a cool acts on; "" is the
	// rig's only zone.
	Zone string `json:"zone,omitempty"`
	// Estimate is how long the phase is expected to take; Bound the longest
	// it may take (the timeout of its wait, or its fixed duration): every
	// phase is bounded.
	Estimate time.Duration `json:"estimate_ns"`
	Bound    time.Duration `json:"bound_ns"`

	PumpDown  *PumpDown  `json:"pump_down,omitempty"`
	LeakCheck *LeakCheck `json:"leak_check,omitempty"`
	Purge     *Purge     `json:"purge,omitempty"`
	Ramp      *Ramp      `json:"ramp,omitempty"`
	Hold      *Hold      `json:"hold,omitempty"`
	Cool      *Cool      `json:"cool,omitempty"`
	Vent      *Vent      `json:"vent,omitempty"`
	Measure   *Measure   `json:"measure,omitempty"`
	Analyse   *Analyse   `json:"analyse,omitempty"`
	// Questions are asked, in order, before the phase runs (question.go).
	Questions []Question `json:"questions,omitempty"`
}

// PumpDown: vent closed, pump on, gate valve open; wait until the chamber
// is at or below BasePressurePa, failing after Timeout.
type PumpDown struct {
	BasePressurePa float64       `json:"base_pressure_pa"`
	Timeout        time.Duration `json:"timeout_ns"`
}

// LeakCheck: gate valve closed; the rate of rise over Hold must stay at or
// below MaxRatePaPerMin; then pump down again to BasePressurePa within
// Timeout (those of the preceding pump_down).
type LeakCheck struct {
	Hold            time.Duration `json:"hold_ns"`
	MaxRatePaPerMin float64       `json:"max_rate_pa_per_min"`
	BasePressurePa  float64       `json:"base_pressure_pa"`
	Timeout         time.Duration `json:"timeout_ns"`
}

// Purge: Gas (inert) at FlowSCCM, its line valve open, for Duration. The
// gas keeps flowing after the phase (a carrier) until a cool closes it.
type Purge struct {
	Gas      string        `json:"gas"`
	FlowSCCM float64       `json:"flow_sccm"`
	Duration time.Duration `json:"duration_ns"`
}

// Ramp: ramp rate RateCPerMin, setpoint TemperatureC, heater on; wait until
// the furnace is within SettleBandC of the setpoint, failing after Timeout.
type Ramp struct {
	TemperatureC float64       `json:"temperature_c"`
	RateCPerMin  float64       `json:"rate_c_per_min"`
	SettleBandC  float64       `json:"settle_band_c"`
	Timeout      time.Duration `json:"timeout_ns"`
}

// Hold: set each of Flows (flow, then line valve open), hold for Duration;
// then close the gases of Close (flow to zero, line valve closed). With
// TemperatureC the furnace is expected at that setpoint (the preceding
// ramp's) throughout.
type Hold struct {
	Duration     time.Duration `json:"duration_ns"`
	TemperatureC *float64      `json:"temperature_c,omitempty"`
	Flows        []GasFlow     `json:"flows,omitempty"`
	Close        []string      `json:"close,omitempty"`
}

// GasFlow is one gas at a flow.
type GasFlow struct {
	Gas      string  `json:"gas"`
	FlowSCCM float64 `json:"flow_sccm"`
}

// Cool: keep the flowing gases on for Purge, heater off, wait until the
// furnace is at or below BelowC (failing after Timeout), then close the
// gases of Close (those still flowing) and wait for every gas off.
type Cool struct {
	Purge   time.Duration `json:"purge_ns"`
	BelowC  float64       `json:"below_c"`
	Timeout time.Duration `json:"timeout_ns"`
	Close   []string      `json:"close,omitempty"`
}

// Vent: gate valve and pump off, vent valve open; wait until the chamber
// is at or above PressurePa (failing after Timeout); vent valve closed.
type Vent struct {
	PressurePa float64       `json:"pressure_pa"`
	Timeout    time.Duration `json:"timeout_ns"`
}

// Measure: acquire a Raman spectrum integrating for Integration.
// MinIntegration and MaxIntegration are the range of integrations the
// recipe's check covered (its input's declared minimum and maximum; a
// constant's own value): the analyse phase may re-acquire within it on the
// model router's advice. A plan pinned before they existed has them zero:
// no re-acquisition.
type Measure struct {
	Integration    time.Duration `json:"integration_ns"`
	MinIntegration time.Duration `json:"min_integration_ns,omitempty"`
	MaxIntegration time.Duration `json:"max_integration_ns,omitempty"`
}

// Analyse: fit the last spectrum for Material; TargetLayers (0: none) is
// the layer count the caller wants, compared with the one found.
type Analyse struct {
	Material     string `json:"material"`
	TargetLayers int    `json:"target_layers,omitempty"`
}

// CleanupPlan is the cleanup that always runs: heater off, reactive gases
// closed, a purge with the inert carrier for Purge, every gas closed.
type CleanupPlan struct {
	Purge time.Duration `json:"purge_ns"`
}

// values are inputs by declared name: float64, time.Duration or string.
type values map[string]any

func (p *Param) value(v values) any {
	if p == nil {
		return nil
	}
	if p.Input != "" {
		return v[p.Input]
	}
	if len(p.Midpoint) == 2 {
		lo, ok1 := v[p.Midpoint[0]].(float64)
		hi, ok2 := v[p.Midpoint[1]].(float64)
		if !ok1 || !ok2 {
			return nil
		}
		return (lo + hi) / 2
	}
	return p.Const
}

func (s *PhaseSpec) num(name string, v values) float64 {
	if x, ok := s.Params[name].value(v).(float64); ok {
		return x
	}
	if def, ok := defOf(s.Kind, name); ok {
		if x, ok := def.def.(float64); ok {
			return x
		}
	}
	return 0
}

func (s *PhaseSpec) dur(name string, v values) time.Duration {
	if x, ok := s.Params[name].value(v).(time.Duration); ok {
		return x
	}
	if def, ok := defOf(s.Kind, name); ok {
		if x, ok := def.def.(time.Duration); ok {
			return x
		}
	}
	return 0
}

func (s *PhaseSpec) str(name string, v values) string {
	x, _ := s.Params[name].value(v).(string)
	return x
}

// Room temperature the static model starts from, °C.
const roomC = 25.0

// planAt resolves every phase with the inputs v (complete: defaults
// applied). It tracks which gases flow so that a cool knows what it closes.
func (r *Recipe) planAt(v values) *Plan {
	p := &Plan{Recipe: r.Identity(), Inputs: map[string]any{}}
	flowing := map[string]bool{}
	var pump *PumpDown
	tempC := roomC
	for _, s := range r.Phases {
		ph := Phase{Kind: s.Kind, Name: s.Name, Stage: s.Stage, Description: s.Description, Zone: s.Zone}
		switch s.Kind {
		case KindPreflight:
			ph.Bound = time.Minute
			if ph.Description == "" {
				ph.Description = "check the interlock and the safety inputs; scrubber on, reactive gases off, vent closed"
			}
		case KindPumpDown:
			pd := &PumpDown{BasePressurePa: s.num("base_pressure_pa", v), Timeout: s.dur("timeout", v)}
			ph.PumpDown, pump = pd, pd
			ph.Estimate, ph.Bound = min(3*time.Minute, pd.Timeout), pd.Timeout
			def(&ph.Description, "pump the chamber to %g Pa or below (at most %v)", pd.BasePressurePa, pd.Timeout)
		case KindLeakCheck:
			lc := &LeakCheck{Hold: s.dur("hold", v), MaxRatePaPerMin: s.num("max_rate_pa_per_min", v)}
			if pump != nil {
				lc.BasePressurePa, lc.Timeout = pump.BasePressurePa, pump.Timeout
			}
			ph.LeakCheck = lc
			ph.Estimate, ph.Bound = lc.Hold+2*time.Minute, lc.Hold+lc.Timeout+time.Minute
			def(&ph.Description, "isolate for %v; rate of rise at most %g Pa/min; pump down again", lc.Hold, lc.MaxRatePaPerMin)
		case KindPurge:
			pu := &Purge{Gas: s.str("gas", v), FlowSCCM: s.num("flow_sccm", v), Duration: s.dur("duration", v)}
			ph.Purge = pu
			flowing[pu.Gas] = pu.FlowSCCM > 0
			ph.Estimate, ph.Bound = pu.Duration, pu.Duration
			def(&ph.Description, "%s at %g sccm for %v", pu.Gas, pu.FlowSCCM, pu.Duration)
		case KindRamp:
			rp := &Ramp{TemperatureC: s.num("temperature_c", v), RateCPerMin: s.num("rate_c_per_min", v),
				SettleBandC: s.num("settle_band_c", v), Timeout: s.dur("timeout", v)}
			heat := rampTime(tempC, rp.TemperatureC, rp.RateCPerMin)
			if rp.Timeout == 0 {
				rp.Timeout = heat*3/2 + 30*time.Minute // as the CVD executor bounds its ramp
			}
			ph.Ramp, tempC = rp, rp.TemperatureC
			ph.Estimate, ph.Bound = min(heat, rp.Timeout), rp.Timeout
			def(&ph.Description, "ramp to %.1f °C at %g °C/min, settle within %g °C", rp.TemperatureC, rp.RateCPerMin, rp.SettleBandC)
		case KindHold:
			h := &Hold{Duration: s.dur("duration", v)}
			if s.Params["temperature_c"] != nil {
				t := s.num("temperature_c", v)
				h.TemperatureC = &t
			}
			for _, f := range s.Flows {
				h.Flows = append(h.Flows, GasFlow{Gas: f.Gas, FlowSCCM: f.Flow.numValue(v)})
				if slices.Contains(s.LeaveOpen, f.Gas) {
					flowing[f.Gas] = true
				} else {
					h.Close = append(h.Close, f.Gas)
					delete(flowing, f.Gas)
				}
			}
			ph.Hold = h
			ph.Estimate, ph.Bound = h.Duration, h.Duration
			def(&ph.Description, "hold for %v%s", h.Duration, flowText(h.Flows))
		case KindCool:
			c := &Cool{Purge: s.dur("purge", v), BelowC: s.num("below_c", v), Timeout: s.dur("timeout", v)}
			for _, g := range slices.Sorted(mapsKeys(flowing)) {
				if flowing[g] {
					c.Close = append(c.Close, g)
				}
			}
			clear(flowing)
			ph.Cool, tempC = c, math.Min(tempC, c.BelowC)
			ph.Estimate, ph.Bound = min(c.Purge+40*time.Minute, c.Purge+c.Timeout), c.Purge+c.Timeout
			def(&ph.Description, "purge %v, heater off, cool to %.1f °C or below (at most %v), gases off", c.Purge, c.BelowC, c.Timeout)
		case KindVent:
			vt := &Vent{PressurePa: s.num("pressure_pa", v), Timeout: s.dur("timeout", v)}
			ph.Vent = vt
			ph.Estimate, ph.Bound = min(2*time.Minute, vt.Timeout), vt.Timeout
			def(&ph.Description, "isolate the pump and vent to %g Pa (at most %v)", vt.PressurePa, vt.Timeout)
		case KindMeasure:
			m := &Measure{Integration: time.Duration(math.Round(s.num("integration_s", v)*1000)) * time.Millisecond}
			m.MinIntegration, m.MaxIntegration = r.secondsRange(s.Params["integration_s"], m.Integration)
			ph.Measure = m
			ph.Estimate, ph.Bound = m.Integration, m.Integration+time.Minute
			def(&ph.Description, "acquire a Raman spectrum (%v)", m.Integration)
		case KindAnalyse:
			a := &Analyse{Material: s.str("material", v), TargetLayers: int(s.num("target_layers", v))}
			ph.Analyse = a
			ph.Estimate, ph.Bound = time.Second, time.Minute
			def(&ph.Description, "fit the spectrum of %s: peaks, distance, layer count", a.Material)
		}
		ph.Questions = s.resolveQuestions(v)
		for _, q := range ph.Questions {
			if q.Given == nil {
				ph.Bound += q.Timeout // the rig holds while the question waits
			}
		}
		p.Estimate += ph.Estimate
		p.Bound += ph.Bound
		p.Phases = append(p.Phases, ph)
	}
	if r.Cleanup != nil {
		p.Cleanup.Purge, _ = r.Cleanup.Purge.value(v).(time.Duration)
	}
	return p
}

// secondsRange is the range of a parameter in seconds that the recipe's
// check covers: its input's declared minimum and maximum (a bound not
// declared is the value itself), or the value alone for a constant.
func (r *Recipe) secondsRange(p *Param, value time.Duration) (lo, hi time.Duration) {
	lo, hi = value, value
	if p == nil || p.Input == "" {
		return lo, hi
	}
	in, ok := r.Input(p.Input)
	if !ok {
		return lo, hi
	}
	ms := func(x float64) time.Duration { return time.Duration(math.Round(x*1000)) * time.Millisecond }
	if in.Min != nil {
		lo = min(lo, ms(*in.Min))
	}
	if in.Max != nil {
		hi = max(hi, ms(*in.Max))
	}
	return lo, hi
}

func (p *Param) numValue(v values) float64 {
	x, _ := p.value(v).(float64)
	return x
}

func def(s *string, format string, args ...any) {
	if *s == "" {
		*s = fmt.Sprintf(format, args...)
	}
}

func flowText(fs []GasFlow) string {
	if len(fs) == 0 {
		return ""
	}
	s := " with"
	for i, f := range fs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %s %g sccm", f.Gas, f.FlowSCCM)
	}
	return s
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// rampTime is how long the furnace takes from a to b °C at rate °C/min.
func rampTime(a, b, rate float64) time.Duration {
	if b <= a || !(rate > 0) {
		return 0
	}
	return time.Duration((b - a) / rate * float64(time.Minute))
}

// Identity returns the recipe's name, version and sha256.
func (r *Recipe) Identity() Identity {
	return Identity{Name: r.Name, Version: r.Version, SHA256: r.SHA256}
}

// Resolve validates a task's inputs (a JSON object; empty is {}) against
// the recipe's input_schema and declared ranges, applies the defaults and
// returns the Plan. A refused input is a *capability.InputError (it matches
// capability.ErrInvalidInput) whose Violations name each failing field by
// its JSON pointer (/growth_duration, /carrier_gas/flow_sccm).
func (r *Recipe) Resolve(inputs json.RawMessage) (*Plan, error) {
	if len(bytes.TrimSpace(inputs)) == 0 {
		inputs = json.RawMessage(`{}`)
	}
	c, err := r.Capability()
	if err != nil {
		return nil, err
	}
	if err := c.ValidateInput(inputs); err != nil { // the schema, then resolve's own rules
		return nil, err
	}
	return r.resolve(inputs)
}

// resolve is Resolve on inputs valid against the input_schema: the rules
// the schema cannot express, the defaults, the Plan.
func (r *Recipe) resolve(inputs json.RawMessage) (*Plan, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(inputs))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, &capability.InputError{Violations: []capability.Violation{{Message: "inputs: " + err.Error()}}}
	}
	v := values{}
	shown := map[string]any{}
	var bad []capability.Violation
	for _, in := range r.Inputs {
		raw, ok := lookup(doc, in)
		if !ok {
			if in.Default == nil {
				continue
			}
			v[in.Name], shown[in.Name] = in.Default, in.defaultJSON
			continue
		}
		path := "/" + in.Name
		if g := in.Group(); g != "" {
			path = "/" + g + "/" + in.Member()
		}
		switch in.Type {
		case TypeNumber, TypeInteger:
			f, _ := raw.(json.Number).Float64()
			v[in.Name], shown[in.Name] = f, raw
		case TypeDuration:
			s, _ := raw.(string)
			d, err := capability.ParseDuration(s)
			switch {
			case err != nil || d <= 0:
				bad = append(bad, capability.Violation{Path: path, Message: fmt.Sprintf("%q is not a positive ISO 8601 duration", s)})
			case in.Min != nil && d.Seconds() < *in.Min:
				bad = append(bad, capability.Violation{Path: path, Message: fmt.Sprintf("%s is below the minimum %v", s, secs(*in.Min))})
			case in.Max != nil && d.Seconds() > *in.Max:
				bad = append(bad, capability.Violation{Path: path, Message: fmt.Sprintf("%s is above the maximum %v", s, secs(*in.Max))})
			}
			v[in.Name], shown[in.Name] = d, s
		case TypeEnum:
			if n, ok := raw.(json.Number); ok {
				f, _ := n.Float64()
				v[in.Name], shown[in.Name] = f, n
			} else {
				v[in.Name], shown[in.Name] = raw, raw
			}
		default:
			v[in.Name], shown[in.Name] = raw, raw
		}
	}
	bad = append(bad, r.windows(v)...)
	if len(bad) > 0 {
		return nil, &capability.InputError{Violations: bad}
	}
	p := r.planAt(v)
	p.Inputs = shown
	return p, nil
}

// windows refuses every midpoint whose low end is above its high end,
// naming the high end's field.
func (r *Recipe) windows(v values) []capability.Violation {
	var bad []capability.Violation
	seen := map[string]bool{}
	for _, p := range r.params() {
		if len(p.Midpoint) != 2 || seen[p.Midpoint[0]+"|"+p.Midpoint[1]] {
			continue
		}
		seen[p.Midpoint[0]+"|"+p.Midpoint[1]] = true
		lo, ok1 := v[p.Midpoint[0]].(float64)
		hi, ok2 := v[p.Midpoint[1]].(float64)
		if ok1 && ok2 && lo > hi {
			in := r.byName[p.Midpoint[1]]
			path := "/" + in.Name
			if g := in.Group(); g != "" {
				path = "/" + g + "/" + in.Member()
			}
			bad = append(bad, capability.Violation{Path: path, Message: fmt.Sprintf("%s %g is below %s %g", p.Midpoint[1], hi, p.Midpoint[0], lo)})
		}
	}
	return bad
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// lookup finds an input's value in the task's inputs.
func lookup(doc map[string]any, in *Input) (any, bool) {
	if g := in.Group(); g != "" {
		obj, ok := doc[g].(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := obj[in.Member()]
		return v, ok
	}
	v, ok := doc[in.Name]
	return v, ok
}

// OutputSchema is the output_schema of the plan's capability, as
// Recipe.OutputSchema: the Raman growth outputs when a phase analyses, the
// process log otherwise. A run pinned to a Plan checks its outputs by it,
// without the recipe file.
func (p *Plan) OutputSchema() json.RawMessage {
	for _, ph := range p.Phases {
		if ph.Kind == KindAnalyse {
			return ramanOutputs
		}
	}
	return processOutputs
}
