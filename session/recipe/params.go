package recipe

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (d *decoder) phases(r *Recipe, e entry) {
	list := deref(e.v)
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		d.add(e.k, e.key, RuleType, "want a non-empty list of phases, got %s", kindName(list))
		return
	}
	known := make([]string, 0, len(Kinds()))
	for _, k := range Kinds() {
		known = append(known, string(k))
	}
	for i, item := range list.Content {
		key := fmt.Sprintf("phases[%d]", i)
		m := deref(item)
		if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
			d.add(item, key, RuleSyntax, "a phase is a mapping of one key, its kind (e.g. - pump_down: {base_pressure_pa: 5, timeout: PT30M}), got %s", kindName(item))
			continue
		}
		k, v := m.Content[0], m.Content[1]
		kind := Kind(k.Value)
		if !slices.Contains(known, k.Value) {
			d.add(k, key, RuleUnknownPhase, "unknown phase %q (known: %s)", k.Value, strings.Join(known, ", "))
			continue
		}
		p := &PhaseSpec{Kind: kind, Name: string(kind), Stage: stages[kind], Params: map[string]*Param{},
			Line: k.Line, Column: k.Column, Key: key + "." + k.Value}
		allowed := slices.Clone(commonPhaseKeys)
		for _, def := range phaseParams[kind] {
			allowed = append(allowed, def.name)
		}
		if kind == KindHold {
			allowed = append(allowed, "flows", "leave_open")
		}
		if zoned(kind) {
			allowed = append(allowed, "zone")
		}
		given := map[string]bool{}
		for _, pe := range d.mapping(v, p.Key, allowed) {
			given[pe.k.Value] = true
			switch pe.k.Value {
			case "name":
				p.Name, _ = d.str(pe)
			case "stage":
				p.Stage, _ = d.str(pe)
			case "description":
				p.Description, _ = d.str(pe)
			case "ask":
				d.questions(r, p, pe)
			case "zone":
				d.zone(p, pe)
			case "flows":
				for _, fe := range d.mapping(pe.v, pe.key, nil) {
					if fp := d.param(r, fe, paramDef{name: fe.k.Value, kind: pNumber, unit: unitSCCM}); fp != nil {
						p.Flows = append(p.Flows, FlowSpec{Gas: fe.k.Value, Flow: fp})
					}
				}
				if len(p.Flows) == 0 && isNull(pe.v) {
					d.add(pe.k, pe.key, RuleType, "want a mapping of gas to flow in sccm")
				}
			case "leave_open":
				lv := deref(pe.v)
				p.leaveOpenLine = pe.k.Line
				if lv.Kind != yaml.SequenceNode {
					d.add(pe.k, pe.key, RuleType, "want a list of gases, got %s", kindName(lv))
					continue
				}
				for _, it := range lv.Content {
					if it = deref(it); it.Kind == yaml.ScalarNode && it.ShortTag() == "!!str" {
						p.LeaveOpen = append(p.LeaveOpen, it.Value)
					} else {
						d.add(it, pe.key, RuleType, "want a gas name, got %s", kindName(it))
					}
				}
			default:
				def, _ := defOf(kind, pe.k.Value)
				if prm := d.param(r, pe, def); prm != nil {
					p.Params[def.name] = prm
				}
			}
		}
		for _, def := range phaseParams[kind] {
			if given[def.name] || !def.required {
				continue
			}
			if def.kind == pDuration {
				d.add(k, p.Key+"."+def.name, RuleUnbounded, "missing: every hold and wait needs a finite bound; give its %s (%s)", def.name, def.kind)
				continue
			}
			d.add(k, p.Key+"."+def.name, RuleMissing, "missing (%s%s)", def.kind, unitNote(def))
		}
		if kind == KindHold {
			for _, g := range p.LeaveOpen {
				if !slices.ContainsFunc(p.Flows, func(f FlowSpec) bool { return f.Gas == g }) {
					d.add(nil, p.Key+".leave_open", RuleType, "%s is not one of the hold's flows", g)
					d.probs[len(d.probs)-1].Line = p.leaveOpenLine
				}
			}
		}
		r.Phases = append(r.Phases, p)
	}
}

func unitNote(def paramDef) string {
	if def.unit == "" {
		return ""
	}
	return " in " + def.unit
}

// param decodes a parameter: a constant of the definition's kind or
// {input: NAME}, a declared input of a compatible type and unit. Inputs
// are decoded before phases, so references resolve here.
func (d *decoder) param(r *Recipe, e entry, def paramDef) *Param {
	p := &Param{Line: e.k.Line, Column: e.k.Column, Key: e.key}
	v := deref(e.v)
	if v.Kind == yaml.MappingNode {
		es := d.mapping(v, e.key, []string{"input", "midpoint"})
		if len(es) != 1 {
			if len(v.Content) == 0 || len(es) > 1 {
				d.add(e.k, e.key, RuleType, "want a constant, {input: NAME} or {midpoint: [LOW, HIGH]}")
			}
			return nil
		}
		if es[0].k.Value == "midpoint" {
			return d.midpoint(r, e, es[0], def, p)
		}
		name, ok := d.str(es[0])
		if !ok {
			return nil
		}
		p.Input = name
		in, ok := r.byName[name]
		if !ok {
			d.add(e.k, e.key, RuleUndeclaredInput, "{input: %s}: no such input is declared under inputs (declared: %s)", name, strings.Join(r.inputNames(), ", "))
			return nil
		}
		d.compatible(e, def, in)
		return p
	}
	switch def.kind {
	case pNumber, pInteger:
		f, ok := number(v)
		if !ok {
			d.add(e.k, e.key, RuleType, "want %s%s or {input: NAME}, got %s", def.kind, unitNote(def), kindName(v))
			return nil
		}
		if def.kind == pInteger && f != math.Trunc(f) {
			d.add(e.k, e.key, RuleType, "want an integer, got %v", f)
			return nil
		}
		p.Const = f
	case pDuration:
		dv, _, ok := duration(v)
		if !ok {
			d.add(e.k, e.key, RuleType, "want %s or {input: NAME}, got %s", def.kind, kindName(v))
			return nil
		}
		p.Const = dv
	case pString:
		s, ok := d.str(e)
		if !ok {
			return nil
		}
		p.Const = s
	}
	return p
}

// midpoint decodes {midpoint: [LOW, HIGH]}: two declared number inputs,
// each compatible with the parameter (a number parameter only).
func (d *decoder) midpoint(r *Recipe, e, me entry, def paramDef, p *Param) *Param {
	seq := deref(me.v)
	if def.kind != pNumber {
		d.add(me.k, me.key, RuleType, "a midpoint is a number; this parameter wants %s", def.kind)
		return nil
	}
	if seq.Kind != yaml.SequenceNode || len(seq.Content) != 2 {
		d.add(me.k, me.key, RuleType, "want [LOW, HIGH]: two declared number inputs")
		return nil
	}
	for i, n := range seq.Content {
		name, ok := d.str(entry{k: me.k, v: n, key: fmt.Sprintf("%s[%d]", me.key, i)})
		if !ok {
			return nil
		}
		in, ok := r.byName[name]
		if !ok {
			d.add(me.k, me.key, RuleUndeclaredInput, "{midpoint: [.., ..]}: %s is not declared under inputs (declared: %s)", name, strings.Join(r.inputNames(), ", "))
			return nil
		}
		d.compatible(e, def, in)
		p.Midpoint = append(p.Midpoint, name)
	}
	if p.Midpoint[0] == p.Midpoint[1] {
		d.add(me.k, me.key, RuleType, "a midpoint of %s and itself: write {input: %s}", p.Midpoint[0], p.Midpoint[0])
		return nil
	}
	return p
}

// compatible reports a referenced input whose type or unit does not fit the
// parameter, or whose range the check could not enumerate.
func (d *decoder) compatible(e entry, def paramDef, in *Input) {
	where := fmt.Sprintf("input %s (line %d)", in.Name, in.Line)
	switch def.kind {
	case pNumber:
		if in.Type != TypeNumber && in.Type != TypeInteger {
			d.add(e.k, e.key, RuleType, "%s is a %s; this parameter wants a number in %s", where, in.Type, def.unit)
			return
		}
		if !sameUnit(def.unit, in.Unit) {
			d.add(e.k, e.key, RuleUnit, "%s is in %q; this parameter is in %s (declare the input in %s)", where, in.Unit, def.unit, def.unit)
			return
		}
	case pInteger:
		if in.Type != TypeInteger {
			d.add(e.k, e.key, RuleType, "%s is a %s; this parameter wants an integer", where, in.Type)
			return
		}
	case pDuration:
		if in.Type != TypeDuration {
			d.add(e.k, e.key, RuleType, "%s is a %s; this parameter wants a duration", where, in.Type)
			return
		}
	case pString:
		if in.Type != TypeEnum || slices.ContainsFunc(in.Values, func(v any) bool { _, ok := v.(string); return !ok }) {
			d.add(e.k, e.key, RuleType, "%s is a %s; this parameter takes an enum of strings, so that every value can be checked against the rig", where, in.Type)
			return
		}
	}
	if (in.Type == TypeNumber || in.Type == TypeInteger || in.Type == TypeDuration) && (in.Min == nil || in.Max == nil) {
		d.add(e.k, e.key, RuleInput, "%s has no min or no max: a parameter's input needs both, so that the check can judge every extreme", where)
	}
	if in.Default == nil && !in.Required {
		d.add(e.k, e.key, RuleInput, "%s has neither a default nor required: true, and a parameter needs a value", where)
	}
}

func (r *Recipe) inputNames() []string {
	var out []string
	for _, in := range r.Inputs {
		out = append(out, in.Name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
