package recipe

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/session/capability"
)

// The output schemas a recipe's capability declares: the Raman growth
// outputs of cvd-material-synthesis when the recipe analyses a spectrum,
// the process log alone otherwise.
var (
	//go:embed outputs/raman.json
	ramanOutputs []byte
	//go:embed outputs/process.json
	processOutputs []byte
)

// MaxCorners bounds the combinations of input extremes Load and Check
// enumerate.
const MaxCorners = 4096

// Thresholds of the derived risk floor, °C.
const (
	hotC      = 100.0 // heating above this is a high_temperature hazard
	veryHotC  = 800.0 // reaching this is R4 (the gate's high_temperature escalation)
	highClass = "T2"
)

// Policy is what Load derives from the phases at every extreme of the
// inputs: the effective risk floor and data classification (never below
// the declared ones), the hazards and resources, and why.
type Policy struct {
	RiskFloor          capability.RiskLevel `json:"risk_floor"`
	RiskCeiling        capability.RiskLevel `json:"risk_ceiling"`
	DataClassification string               `json:"data_classification"`
	RequiresApproval   bool                 `json:"requires_human_approval"`
	Hazards            []string             `json:"hazard_categories"`
	Resources          []string             `json:"resource_types"`
	Gases              []string             `json:"gases"`             // every gas a phase opens
	MaxTemperatureC    float64              `json:"max_temperature_c"` // the hottest setpoint
	Reasons            []string             `json:"reasons"`           // the rules that set the floor and class
	// Budgets are the declared budgets, each missing one derived as an upper
	// bound from the phases (see docs/RECIPES.md).
	Budgets capability.Budgets `json:"budgets"`
	// MaxDuration is the declared max_duration, or the derived bound.
	MaxDuration time.Duration `json:"max_duration_ns"`
}

type derived struct {
	Policy
	corners int
}

// Policy returns what Load derived.
func (r *Recipe) Policy() Policy { return r.derived.Policy }

// referenced lists the inputs a parameter references, in declaration order.
func (r *Recipe) referenced() []*Input {
	used := map[string]bool{}
	for _, p := range r.params() {
		if p.Input != "" {
			used[p.Input] = true
		}
		for _, m := range p.Midpoint {
			used[m] = true
		}
	}
	var out []*Input
	for _, in := range r.Inputs {
		if used[in.Name] {
			out = append(out, in)
		}
	}
	return out
}

// params lists every parameter of the phases and the cleanup.
func (r *Recipe) params() []*Param {
	var out []*Param
	for _, s := range r.Phases {
		for _, p := range s.Params {
			out = append(out, p)
		}
		for _, f := range s.Flows {
			out = append(out, f.Flow)
		}
	}
	if r.Cleanup != nil && r.Cleanup.Purge != nil {
		out = append(out, r.Cleanup.Purge)
	}
	return out
}

// extremes are the values of one input the check tries.
func (in *Input) extremes() []any {
	switch in.Type {
	case TypeNumber, TypeInteger:
		if *in.Min == *in.Max {
			return []any{*in.Min}
		}
		return []any{*in.Min, *in.Max}
	case TypeDuration:
		if *in.Min == *in.Max {
			return []any{secs(*in.Min)}
		}
		return []any{secs(*in.Min), secs(*in.Max)}
	case TypeEnum:
		return slices.Clone(in.Values)
	}
	return []any{in.Default}
}

// defaults are every input at its default.
func (r *Recipe) defaults() values {
	v := values{}
	for _, in := range r.Inputs {
		if in.Default != nil {
			v[in.Name] = in.Default
		}
	}
	return v
}

// corners enumerates every combination of the referenced inputs'
// extremes (the others at their defaults); nil and the count when there
// are more than MaxCorners.
func (r *Recipe) corners() ([]values, int) {
	ins := r.referenced()
	n := 1
	for _, in := range ins {
		n *= len(in.extremes())
		if n > MaxCorners {
			return nil, n
		}
	}
	out := []values{r.defaults()}
	for _, in := range ins {
		var next []values
		for _, base := range out {
			for _, x := range in.extremes() {
				v := values{}
				for k, y := range base {
					v[k] = y
				}
				v[in.Name] = x
				next = append(next, v)
			}
		}
		out = next
	}
	return out, n
}

// derive computes the policy from the plans at every corner.
func (r *Recipe) derive(hazards map[string]rig.Hazard) Problems {
	cs, n := r.corners()
	r.derived.corners = n
	if cs == nil {
		return Problems{{File: r.File, Line: r.root.Line, Key: "inputs", Rule: RuleCorners,
			Message: fmt.Sprintf("the referenced inputs have %d combinations of extremes, above %d: reference fewer inputs or narrow enums", n, MaxCorners)}}
	}
	p := &r.derived.Policy
	gases := map[string]bool{}
	vacuum := false
	b := capability.Budgets{GasVolume: map[string]float64{}}
	var heater float64
	var actions int
	var bound time.Duration
	for _, v := range cs {
		plan := r.planAt(v)
		u := usageOf(plan)
		for g, vol := range u.gas {
			gases[g] = true
			b.GasVolume[g] = math.Max(b.GasVolume[g], math.Ceil(vol))
		}
		heater = math.Max(heater, math.Ceil(u.heater.Seconds()))
		actions = max(actions, u.actions)
		bound = max(bound, plan.Bound+plan.Cleanup.Purge)
		for _, ph := range plan.Phases {
			switch ph.Kind {
			case KindRamp:
				p.MaxTemperatureC = math.Max(p.MaxTemperatureC, ph.Ramp.TemperatureC)
			case KindPumpDown, KindLeakCheck, KindVent:
				vacuum = true
			}
		}
	}
	p.Gases = slices.Sorted(mapsKeys(gases))

	floor, class := capability.R2, "T1"
	p.Reasons = append(p.Reasons, "R2: moves physical hardware")
	raise := func(to capability.RiskLevel, why string) {
		if to.Rank() > floor.Rank() {
			floor = to
		}
		p.Reasons = append(p.Reasons, string(to)+": "+why)
	}
	var hz []string
	if p.MaxTemperatureC > hotC {
		hz = append(hz, "high_temperature")
		raise(capability.R3, fmt.Sprintf("heats to %g °C (above %g °C)", p.MaxTemperatureC, hotC))
	}
	if p.MaxTemperatureC >= veryHotC {
		raise(capability.R4, fmt.Sprintf("reaches %g °C (%g °C or more)", p.MaxTemperatureC, veryHotC))
		class = highClass
	}
	for _, g := range p.Gases { // the hazard classes are the rig's layout's
		switch h := hazards[g]; h {
		case rig.Inert:
		case rig.Toxic:
			hz = appendOnce(hz, "toxic_gas")
			raise(capability.R3, "opens "+g+" (toxic)")
			class = highClass
		case rig.Flammable, rig.Oxidising, rig.Corrosive:
			hz = appendOnce(hz, string(h)+"_gas")
			raise(capability.R3, "opens "+g+" ("+string(h)+")")
		default:
			hz = appendOnce(hz, "unclassified_gas") // taken as toxic could be
			raise(capability.R3, "opens "+g+" (hazard class unknown: not a gas line of the rig it was loaded for)")
			class = highClass
		}
	}
	if class == highClass {
		p.Reasons = append(p.Reasons, "T2: the process conditions of a hazardous process (toxic or unclassified gas, or 800 °C and above)")
	}
	if d := r.Safety.RiskFloor; d.Rank() > floor.Rank() {
		floor = d
		p.Reasons = append(p.Reasons, string(d)+": declared risk_floor")
	}
	if d := r.Safety.DataClassification; d > class {
		class = d
		p.Reasons = append(p.Reasons, d+": declared data_classification")
	}
	p.RiskFloor, p.DataClassification, p.Hazards = floor, class, hz
	p.RiskCeiling = r.Safety.RiskCeiling
	if p.RiskCeiling == "" {
		p.RiskCeiling = capability.R4
		if floor.Rank() > p.RiskCeiling.Rank() {
			p.RiskCeiling = floor
		}
	} else if floor.Rank() > p.RiskCeiling.Rank() {
		return Problems{{File: r.File, Line: r.root.Line, Key: "safety.risk_ceiling", Rule: RuleType,
			Message: fmt.Sprintf("%s is below the derived risk floor %s (%s)", p.RiskCeiling, floor, strings.Join(p.Reasons, "; "))}}
	}
	p.RequiresApproval = floor.Rank() >= capability.R3.Rank()
	if r.Safety.RequiresHumanApproval != nil {
		p.RequiresApproval = *r.Safety.RequiresHumanApproval
	}
	if p.MaxTemperatureC > roomC {
		p.Resources = append(p.Resources, "high_temperature_furnace")
	}
	if len(p.Gases) > 0 {
		p.Resources = append(p.Resources, "gas_supply")
	}
	if vacuum {
		p.Resources = append(p.Resources, "vacuum_system")
	}
	if slices.ContainsFunc(r.Phases, func(s *PhaseSpec) bool { return s.Kind == KindMeasure }) {
		p.Resources = append(p.Resources, "raman_spectrometer") // the gate derives rig.measure from it
	}

	// Budgets: declared ones win; the others are the upper bounds above.
	b.HeaterFullPower = &heater
	if heater <= 0 {
		b.HeaterFullPower = nil
	}
	ma := 2*actions + 50 // each action may be retried; cleanup and preflight writes
	b.MaxActions = &ma
	if d := r.Budgets; d != nil {
		for g, vol := range d.GasVolume {
			b.GasVolume[g] = vol
		}
		if d.HeaterFullPower != nil {
			b.HeaterFullPower = d.HeaterFullPower
		}
		if d.MaxActions != nil {
			b.MaxActions = d.MaxActions
		}
	}
	p.Budgets = b
	p.MaxDuration = (bound*11/10 + time.Minute - 1).Truncate(time.Minute)
	if r.Constraints.MaxDuration != "" {
		p.MaxDuration, _ = capability.ParseDuration(r.Constraints.MaxDuration)
	}
	return nil
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// usage is what one plan consumes at most.
type usage struct {
	gas     map[string]float64 // scc
	heater  time.Duration      // heater enabled
	actions int
}

// usageOf bounds a plan's consumption: each phase lasts its Bound; a gas
// flows from the phase that opens it to the one that closes it (the
// cleanup's purge included); the heater is on from a ramp to a cool's end
// of purge.
func usageOf(p *Plan) usage {
	u := usage{gas: map[string]float64{}}
	flowing := map[string]float64{}
	heater := false
	run := func(d time.Duration) {
		for g, f := range flowing {
			u.gas[g] += f * d.Minutes()
		}
		if heater {
			u.heater += d
		}
	}
	for _, ph := range p.Phases {
		switch ph.Kind {
		case KindPreflight:
			u.actions += 6
		case KindPumpDown:
			u.actions += 3
		case KindLeakCheck:
			u.actions += 4
		case KindPurge:
			flowing[ph.Purge.Gas] = ph.Purge.FlowSCCM
			u.actions += 2
		case KindRamp:
			heater = true
			u.actions += 3
		case KindHold:
			for _, f := range ph.Hold.Flows {
				flowing[f.Gas] = f.FlowSCCM
			}
			u.actions += 2 * len(ph.Hold.Flows)
			run(ph.Bound)
			for _, g := range ph.Hold.Close {
				delete(flowing, g)
			}
			u.actions += 2 * len(ph.Hold.Close)
			continue
		case KindCool:
			run(ph.Cool.Purge)
			heater = false
			run(ph.Cool.Timeout)
			clear(flowing)
			u.actions += 1 + 2*len(ph.Cool.Close)
			continue
		case KindVent:
			u.actions += 4
		case KindMeasure:
			u.actions++
		}
		run(ph.Bound)
	}
	heater = false
	run(p.Cleanup.Purge)
	return u
}

// InputSchema returns the JSON Schema (2020-12) of the task's inputs,
// generated from the declared inputs: a dotted input becomes a member of
// an object; number and integer inputs carry minimum and maximum; duration
// inputs are ISO 8601 strings (their range is Resolve's to enforce: a
// schema cannot compare durations); enums list their values.
func (r *Recipe) InputSchema() json.RawMessage {
	type obj = map[string]any
	props, groups := obj{}, map[string]obj{}
	var required []string
	groupRequired := map[string][]string{}
	for _, in := range r.Inputs {
		s := obj{}
		desc := in.Description
		switch in.Type {
		case TypeNumber, TypeInteger:
			s["type"] = string(in.Type)
			if in.Min != nil {
				s["minimum"] = *in.Min
			}
			if in.Max != nil {
				s["maximum"] = *in.Max
			}
			if in.Unit != "" {
				desc = strings.TrimSpace(desc + " [" + in.Unit + "]")
			}
		case TypeString:
			s["type"] = "string"
		case TypeDuration:
			s["type"] = "string"
			s["pattern"] = durationPattern().String()
			s["minLength"] = 3
			if in.Min != nil && in.Max != nil {
				desc = strings.TrimSpace(fmt.Sprintf("%s (ISO 8601, %s to %s)", desc, isoOf(*in.Min), isoOf(*in.Max)))
			}
		case TypeEnum:
			s["enum"] = in.Values
		}
		if desc != "" {
			s["description"] = desc
		}
		if in.defaultJSON != nil {
			s["default"] = in.defaultJSON
		}
		if g := in.Group(); g != "" {
			if groups[g] == nil {
				groups[g] = obj{}
			}
			groups[g][in.Member()] = s
			if in.Required {
				groupRequired[g] = append(groupRequired[g], in.Member())
			}
			continue
		}
		props[in.Name] = s
		if in.Required {
			required = append(required, in.Name)
		}
	}
	for g, members := range groups {
		o := obj{"type": "object", "additionalProperties": false, "properties": members}
		if req := groupRequired[g]; len(req) > 0 {
			o["required"] = req
			required = append(required, g)
		}
		props[g] = o
	}
	root := obj{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		root["required"] = required
	}
	raw, _ := json.Marshal(root)
	return raw
}

// isoOf writes seconds as an ISO 8601 duration.
func isoOf(s float64) string {
	d := secs(s)
	out := "PT"
	if h := d / time.Hour; h > 0 {
		out += fmt.Sprintf("%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		out += fmt.Sprintf("%dM", m)
		d -= m * time.Minute
	}
	if d > 0 || out == "PT" {
		out += fmt.Sprintf("%gS", d.Seconds())
	}
	return out
}

// OutputSchema is the output_schema of the recipe's capability: the Raman
// growth outputs (today's cvd-material-synthesis) when a phase analyses a
// spectrum, the process log otherwise.
func (r *Recipe) OutputSchema() json.RawMessage {
	for _, s := range r.Phases {
		if s.Kind == KindAnalyse {
			return ramanOutputs
		}
	}
	return processOutputs
}

// Declaration returns the capability declaration of the recipe in the
// spec's {"capability": {...}} form that capability.Parse reads.
func (r *Recipe) Declaration() ([]byte, error) {
	p := r.derived.Policy
	d := capability.Declaration{
		Name: r.Name, Version: r.Version, Description: r.Description,
		InputSchema: r.InputSchema(), OutputSchema: r.OutputSchema(),
		Safety: capability.Safety{RiskCeiling: p.RiskCeiling, RequiresHumanApproval: p.RequiresApproval,
			InvolvesPhysicalResources: true, ResourceTypes: p.Resources, HazardCategories: p.Hazards},
		Constraints: r.Constraints,
	}
	if d.Constraints.MaxDuration == "" {
		d.Constraints.MaxDuration = isoOf(p.MaxDuration.Seconds())
	}
	if d.Safety.HazardCategories == nil {
		d.Safety.HazardCategories = []string{}
	}
	b := p.Budgets
	d.Budgets = &b
	return json.MarshalIndent(map[string]any{"capability": d}, "", "  ")
}

// Capability returns the recipe as a capability: its Declaration parsed by
// capability.Parse (input_schema and output_schema compiled), built once.
// The declaration format has no place for the derived risk floor and data
// classification (Policy): they are the Capability's RiskFloor and
// MinDataClassification, which the gate never goes below.
func (r *Recipe) Capability() (*capability.Capability, error) {
	if r.capab != nil {
		return r.capab, nil
	}
	raw, err := r.Declaration()
	if err != nil {
		return nil, fmt.Errorf("recipe %s: declaration: %w", r.File, err)
	}
	c, err := capability.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", r.File, err)
	}
	c.RiskFloor, c.MinDataClassification = r.derived.RiskFloor, r.derived.DataClassification
	c.SetInputCheck(func(raw []byte) error { _, err := r.resolve(raw); return err })
	r.capab = c
	return c, nil
}
