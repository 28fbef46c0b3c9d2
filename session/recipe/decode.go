package recipe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hcp-edge/device/rig"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"

	"hcp-edge/session/capability"
)

// Load parses and checks one recipe file's content; name is how problems
// name the file. It refuses, with a Problems error listing every problem at
// once (each FILE:LINE: key: message): a file above MaxSize, malformed
// YAML, an unknown key or phase, a value of the wrong type, a version that
// is not semantic, a bad input declaration, a reference to an undeclared
// input or one of another unit, and a missing cleanup. What needs the rig
// (the envelope, the gas lines, the order of heating, cooling, purging and
// venting) is Check's.
//
// Load knows no rig: every gas a phase opens counts as hazardous (its class
// unknown) in the derived risk policy. LoadFor takes the rig's hazard
// classes.
func Load(name string, data []byte) (*Recipe, error) { return LoadFor(name, data, nil) }

// LoadFor is Load with the hazard class of each gas line of the rig (the
// layout's: inert, toxic, flammable, oxidising, corrosive), from which the
// risk policy is derived.
func LoadFor(name string, data []byte, hazards map[string]rig.Hazard) (*Recipe, error) {
	d := &decoder{file: name}
	if len(data) > MaxSize {
		d.probs = append(d.probs, Problem{File: name, Rule: RuleTooLarge,
			Message: fmt.Sprintf("%d bytes: a recipe may have at most %d (1 MiB)", len(data), MaxSize)})
		return nil, d.probs
	}
	sum := sha256.Sum256(data)
	r := &Recipe{File: name, SHA256: hex.EncodeToString(sum[:]), byName: map[string]*Input{}, source: bytes.Clone(data)}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := Problem{File: name, Rule: RuleSyntax, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := syntaxLineRE().FindStringSubmatch(err.Error()); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Message = m[2]
			// yaml.v3 numbers the line of an unclosed flow collection from
			// 0 (its parser's context mark); the others from 1.
			if strings.HasPrefix(p.Message, "did not find expected ',' or") {
				p.Line++
				p.Message = "unclosed flow collection: " + p.Message
			}
		}
		return nil, Problems{p}
	}
	if len(doc.Content) == 0 {
		return nil, Problems{{File: name, Rule: RuleSyntax, Message: "empty recipe"}}
	}
	r.root = doc.Content[0]
	d.recipe(r, r.root)
	if len(d.probs) > 0 {
		return nil, d.probs
	}
	if ps := r.derive(hazards); len(ps) > 0 {
		return nil, ps
	}
	if _, err := r.Capability(); err != nil {
		return nil, Problems{{File: name, Line: r.root.Line, Rule: RuleInput,
			Message: "the generated capability declaration is refused: " + err.Error()}}
	}
	return r, nil
}

// The package's regular expressions are compiled on first use
// (sync.OnceValue), not in package init, which every hcp-edge command pays
// at start-up, the e-stop too: a bounded repetition such as {0,62} compiles
// to as many states (docs/FOOTPRINT.md).
var syntaxLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`) })

// decoder walks the node tree, collecting problems.
type decoder struct {
	file  string
	probs Problems
}

func (d *decoder) add(n *yaml.Node, key, rule, format string, args ...any) {
	p := Problem{File: d.file, Key: key, Rule: rule, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.probs = append(d.probs, p)
}

// entry is one key of a mapping.
type entry struct {
	k, v *yaml.Node
	key  string // dotted key path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// mapping returns the entries of a mapping node. known == nil accepts any
// key; otherwise an unknown key is a problem naming the known ones. A key
// given twice is a problem. A null node is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, key string, known []string) []entry {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.add(n, key, RuleType, "want a mapping, got %s", kindName(n))
		return nil
	}
	var out []entry
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ek := join(key, k.Value)
		if k.Value == "<<" {
			d.add(k, ek, RuleSyntax, "merge keys are not allowed in a recipe: write every key out")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(k, ek, RuleSyntax, "defined twice (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			d.add(k, ek, RuleUnknownKey, "unknown key (known here: %s)", strings.Join(sorted(known), ", "))
			continue
		}
		out = append(out, entry{k: k, v: v, key: ek})
	}
	return out
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func kindName(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!null":
			return "nothing"
		}
		return n.Value
	}
	return "?"
}

func (d *decoder) str(e entry) (string, bool) {
	v := deref(e.v)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || strings.TrimSpace(v.Value) == "" {
		d.add(e.k, e.key, RuleType, "want a non-empty string, got %s", kindName(v))
		return "", false
	}
	return v.Value, true
}

func (d *decoder) boolean(e entry) (bool, bool) {
	v := deref(e.v)
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		d.add(e.k, e.key, RuleType, "want true or false, got %s", kindName(v))
		return false, false
	}
	return b, true
}

// number decodes a finite number (an int or a float scalar).
func number(v *yaml.Node) (float64, bool) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") {
		return 0, false
	}
	var f float64
	if v.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func (d *decoder) num(e entry) (float64, bool) {
	f, ok := number(e.v)
	if !ok {
		d.add(e.k, e.key, RuleType, "want a finite number, got %s", kindName(e.v))
	}
	return f, ok
}

// duration decodes an ISO 8601 duration of days, hours, minutes, seconds.
func duration(v *yaml.Node) (time.Duration, string, bool) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return 0, "", false
	}
	dur, err := capability.ParseDuration(v.Value)
	if err != nil || v.Value == "" {
		return 0, v.Value, false
	}
	return dur, v.Value, true
}

func (d *decoder) dur(e entry) (time.Duration, bool) {
	dv, _, ok := duration(e.v)
	if !ok {
		d.add(e.k, e.key, RuleType, "want an ISO 8601 duration such as PT5M (days, hours, minutes, seconds; at most a year), got %s", kindName(e.v))
	}
	return dv, ok
}

var topKeys = []string{"name", "version", "description", "safety", "constraints", "budgets", "inputs", "phases", "cleanup"}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })

func (d *decoder) recipe(r *Recipe, root *yaml.Node) {
	if deref(root).Kind != yaml.MappingNode {
		d.add(root, "", RuleSyntax, "a recipe is a mapping (name, version, description, inputs, phases, cleanup), got %s", kindName(root))
		return
	}
	got := map[string]entry{}
	for _, e := range d.mapping(root, "", topKeys) {
		got[e.k.Value] = e
	}
	for _, k := range []string{"name", "version", "description", "phases"} {
		if _, ok := got[k]; !ok {
			d.add(root, k, RuleMissing, "missing")
		}
	}
	if e, ok := got["name"]; ok {
		if s, ok := d.str(e); ok {
			if !nameRE().MatchString(s) {
				d.add(e.k, e.key, RuleType, "%q: want lower-case letters, digits and hyphens (at most 63), as a capability name", s)
			}
			r.Name = s
		}
	}
	if e, ok := got["version"]; ok {
		v := deref(e.v)
		if v.Kind != yaml.ScalarNode {
			d.add(e.k, e.key, RuleVersion, "want a semantic version such as 1.0.0, got %s", kindName(v))
		} else if sv, err := semver.StrictNewVersion(v.Value); err != nil {
			r.versionLine = e.k.Line
			d.add(e.k, e.key, RuleVersion, "%q is not a semantic version MAJOR.MINOR.PATCH (e.g. 1.0.0): %v", v.Value, err)
		} else {
			r.Version, r.SemVer, r.versionLine = sv.String(), sv, e.k.Line
		}
	}
	if e, ok := got["description"]; ok {
		r.Description, _ = d.str(e)
	}
	if e, ok := got["safety"]; ok {
		d.safety(r, e)
	}
	if e, ok := got["constraints"]; ok {
		d.constraints(r, e)
	}
	if e, ok := got["budgets"]; ok {
		d.budgets(r, e)
	}
	if e, ok := got["inputs"]; ok {
		d.inputs(r, e)
	}
	if e, ok := got["phases"]; ok {
		d.phases(r, e)
	}
	if e, ok := got["cleanup"]; ok && !isNull(e.v) {
		c := &CleanupSpec{Line: e.k.Line}
		given := false
		for _, ce := range d.mapping(e.v, e.key, []string{"purge"}) {
			c.Purge, given = d.param(r, ce, paramDef{name: "purge", kind: pDuration}), true
		}
		if !given {
			d.add(e.k, e.key+".purge", RuleMissing, "missing: how long the cleanup purges with the inert gas before closing it (e.g. PT5M)")
		}
		r.Cleanup = c
	} else {
		d.add(root, "cleanup", RuleNoCleanup, "missing: every recipe needs a cleanup, which always runs (heater off, reactive gases closed, a purge, every gas closed), e.g. cleanup: {purge: PT5M}")
	}
}

var riskLevels = []string{"R1", "R2", "R3", "R4", "R5"}
var classes = []string{"T1", "T2", "T3", "T4"}

func (d *decoder) safety(r *Recipe, e entry) {
	for _, s := range d.mapping(e.v, e.key, []string{"risk_floor", "risk_ceiling", "data_classification", "requires_human_approval"}) {
		switch s.k.Value {
		case "risk_floor", "risk_ceiling":
			v, ok := d.str(s)
			if ok && !slices.Contains(riskLevels, v) {
				d.add(s.k, s.key, RuleType, "%q is not one of: %s", v, strings.Join(riskLevels, ", "))
				ok = false
			}
			if ok && s.k.Value == "risk_floor" {
				r.Safety.RiskFloor = capability.RiskLevel(v)
			} else if ok {
				r.Safety.RiskCeiling = capability.RiskLevel(v)
			}
		case "data_classification":
			if v, ok := d.str(s); ok {
				if !slices.Contains(classes, v) {
					d.add(s.k, s.key, RuleType, "%q is not one of: %s", v, strings.Join(classes, ", "))
				} else {
					r.Safety.DataClassification = v
				}
			}
		case "requires_human_approval":
			if b, ok := d.boolean(s); ok {
				r.Safety.RequiresHumanApproval = &b
			}
		}
	}
	if r.Safety.RiskFloor != "" && r.Safety.RiskCeiling != "" && r.Safety.RiskFloor.Rank() > r.Safety.RiskCeiling.Rank() {
		d.add(e.k, e.key, RuleType, "risk_floor %s above risk_ceiling %s", r.Safety.RiskFloor, r.Safety.RiskCeiling)
	}
}

func (d *decoder) constraints(r *Recipe, e entry) {
	for _, c := range d.mapping(e.v, e.key, []string{"max_duration", "abort_timeout", "concurrent_limit"}) {
		switch c.k.Value {
		case "max_duration", "abort_timeout":
			if dv, ok := d.dur(c); ok {
				if dv <= 0 {
					d.add(c.k, c.key, RuleType, "must be positive")
				} else if c.k.Value == "max_duration" {
					r.Constraints.MaxDuration = deref(c.v).Value
				} else {
					r.Constraints.AbortTimeout = deref(c.v).Value
				}
			}
		case "concurrent_limit":
			if f, ok := d.num(c); ok {
				if f != math.Trunc(f) || f < 1 || f > 1000 {
					d.add(c.k, c.key, RuleType, "want an integer from 1 to 1000")
				} else {
					r.Constraints.ConcurrentLimit = int(f)
				}
			}
		}
	}
}

func (d *decoder) budgets(r *Recipe, e entry) {
	b := &capability.Budgets{}
	for _, c := range d.mapping(e.v, e.key, []string{"gas_volume_scc", "heater_full_power_s", "max_actions"}) {
		switch c.k.Value {
		case "gas_volume_scc":
			b.GasVolume = map[string]float64{}
			for _, g := range d.mapping(c.v, c.key, nil) {
				if f, ok := d.num(g); ok {
					if f < 0 {
						d.add(g.k, g.key, RuleType, "must not be negative")
					}
					b.GasVolume[g.k.Value] = f
				}
			}
		case "heater_full_power_s":
			if f, ok := d.num(c); ok {
				if f <= 0 {
					d.add(c.k, c.key, RuleType, "must be positive")
				}
				b.HeaterFullPower = &f
			}
		case "max_actions":
			if f, ok := d.num(c); ok {
				if f != math.Trunc(f) || f < 1 || f > 1e9 {
					d.add(c.k, c.key, RuleType, "want a positive integer")
				}
				n := int(f)
				b.MaxActions = &n
			}
		}
	}
	r.Budgets = b
}

var inputNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}(\.[a-z][a-z0-9_]{0,62})?$`) })

var inputKeys = []string{"type", "unit", "min", "max", "default", "values", "description", "required"}

func (d *decoder) inputs(r *Recipe, e entry) {
	for _, ie := range d.mapping(e.v, e.key, nil) {
		name := ie.k.Value
		if !inputNameRE().MatchString(name) {
			d.add(ie.k, ie.key, RuleInput, "input name %q: want lower-case letters, digits and underscores, optionally one dot for an object member (carrier_gas.flow_sccm)", name)
			continue
		}
		in := &Input{Name: name, Line: ie.k.Line}
		if d.input(in, ie) {
			r.Inputs = append(r.Inputs, in)
			r.byName[name] = in
		}
	}
	// A group name cannot also be a plain input.
	for _, in := range r.Inputs {
		if g := in.Group(); g != "" {
			if other, ok := r.byName[g]; ok {
				d.add(nil, "inputs."+g, RuleInput, "declared both as an input (line %d) and as the object of %s (line %d)", other.Line, in.Name, in.Line)
				d.probs[len(d.probs)-1].Line = other.Line
			}
		}
	}
}

// input decodes one input declaration; it reports whether it is usable.
func (d *decoder) input(in *Input, ie entry) bool {
	got := map[string]entry{}
	for _, f := range d.mapping(ie.v, ie.key, inputKeys) {
		got[f.k.Value] = f
	}
	te, ok := got["type"]
	if !ok {
		d.add(ie.k, ie.key+".type", RuleMissing, "missing (number, integer, string, duration or enum)")
		return false
	}
	t, ok := d.str(te)
	if !ok {
		return false
	}
	in.Type = InputType(t)
	n0 := len(d.probs)
	bad := func(f entry, format string, args ...any) { d.add(f.k, f.key, RuleInput, format, args...) }
	if f, ok := got["description"]; ok {
		in.Description, _ = d.str(f)
	}
	if f, ok := got["required"]; ok {
		in.Required, _ = d.boolean(f)
	}
	if f, ok := got["unit"]; ok {
		in.Unit, _ = d.str(f)
	}
	only := func(allowed ...string) {
		for k, f := range got {
			if !slices.Contains(append([]string{"type", "description", "required", "default"}, allowed...), k) {
				bad(f, "a %s input takes no %s", t, k)
			}
		}
	}
	switch in.Type {
	case TypeNumber, TypeInteger:
		only("unit", "min", "max")
		if _, ok := got["unit"]; !ok && in.Type == TypeNumber {
			d.add(ie.k, ie.key+".unit", RuleMissing, "missing: a number input states its unit (celsius, sccm, Pa, s, ...)")
		}
		for _, k := range []string{"min", "max"} {
			f, ok := got[k]
			if !ok {
				continue
			}
			if v, ok := d.num(f); ok {
				if in.Type == TypeInteger && v != math.Trunc(v) {
					bad(f, "want an integer")
				}
				if k == "min" {
					in.Min = &v
				} else {
					in.Max = &v
				}
			}
		}
		if f, ok := got["default"]; ok {
			if v, ok := d.num(f); ok {
				if in.Type == TypeInteger && v != math.Trunc(v) {
					bad(f, "want an integer")
				}
				in.Default, in.defaultJSON = v, v
				if in.Type == TypeInteger {
					in.defaultJSON = int64(v)
				}
			}
		}
	case TypeDuration:
		only("min", "max")
		for _, k := range []string{"min", "max"} {
			if f, ok := got[k]; ok {
				if v, ok := d.dur(f); ok {
					s := v.Seconds()
					if k == "min" {
						in.Min = &s
					} else {
						in.Max = &s
					}
				}
			}
		}
		if f, ok := got["default"]; ok {
			if v, ok := d.dur(f); ok {
				if !durationPattern().MatchString(deref(f.v).Value) {
					bad(f, "%q: a task's duration is written PTnHnMnS (hours, minutes, seconds)", deref(f.v).Value)
				}
				in.Default, in.defaultJSON = v, deref(f.v).Value
			}
		}
	case TypeString:
		only()
		if f, ok := got["default"]; ok {
			if v, ok := d.str(f); ok {
				in.Default, in.defaultJSON = v, v
			}
		}
	case TypeEnum:
		only("values")
		f, ok := got["values"]
		if !ok {
			d.add(ie.k, ie.key+".values", RuleMissing, "missing: an enum lists its values")
			break
		}
		vs := deref(f.v)
		if vs.Kind != yaml.SequenceNode || len(vs.Content) == 0 {
			bad(f, "want a non-empty list of strings or numbers")
			break
		}
		for _, it := range vs.Content {
			it = deref(it)
			var v any
			if n, ok := number(it); ok {
				v = n
			} else if it.Kind == yaml.ScalarNode && it.ShortTag() == "!!str" && it.Value != "" {
				v = it.Value
			} else {
				d.add(it, f.key, RuleInput, "enum value %s: want a string or a number", kindName(it))
				continue
			}
			if slices.Contains(in.Values, v) {
				d.add(it, f.key, RuleInput, "enum value %v listed twice", v)
				continue
			}
			in.Values = append(in.Values, v)
		}
		if df, ok := got["default"]; ok {
			dv := deref(df.v)
			var v any = dv.Value
			if n, ok := number(dv); ok {
				v = n
			}
			if !slices.Contains(in.Values, v) {
				bad(df, "default %v is not one of the values", v)
			} else {
				in.Default, in.defaultJSON = v, v
			}
		}
	default:
		d.add(te.k, te.key, RuleInput, "unknown input type %q (known: number, integer, string, duration, enum)", t)
		return false
	}
	if in.Min != nil && in.Max != nil && *in.Min > *in.Max {
		d.add(ie.k, ie.key, RuleInput, "min above max")
	}
	if in.Type == TypeDuration && in.Min != nil && *in.Min <= 0 {
		bad(got["min"], "a duration's minimum must be positive")
	}
	if f, ok := got["default"]; ok && in.Default != nil {
		if v, ok := in.Default.(float64); ok && (in.Min != nil && v < *in.Min || in.Max != nil && v > *in.Max) {
			bad(f, "default %v outside min .. max", v)
		}
		if v, ok := in.Default.(time.Duration); ok && (in.Min != nil && v.Seconds() < *in.Min || in.Max != nil && v.Seconds() > *in.Max) {
			bad(f, "default %v outside min .. max", v)
		}
	}
	return len(d.probs) == n0
}

var durationPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^PT(\d+H)?(\d+M)?(\d+(\.\d+)?S)?$`) })
