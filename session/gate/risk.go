package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/device/catalog"
	"hcp-edge/session/capability"
)

// Fired is a risk rule that fired for a task: its name, the level it
// demands, and what the caller could change so that it does not fire.
type Fired struct {
	Rule   string               `json:"rule"`
	Level  capability.RiskLevel `json:"level"`
	Remedy string               `json:"remedy,omitempty"` // "" when nothing in the task avoids it
}

// decodeInputs parses the inputs object with numbers kept exact.
func decodeInputs(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// lookup returns the value at a dotted path and the object holding it.
func lookup(doc map[string]any, path string) (val any, parent map[string]any, ok bool) {
	cur := doc
	parts := strings.Split(path, ".")
	for i, p := range parts {
		v, found := cur[p]
		if !found {
			return nil, nil, false
		}
		if i == len(parts)-1 {
			return v, cur, true
		}
		next, isObj := v.(map[string]any)
		if !isObj {
			return nil, nil, false
		}
		cur = next
	}
	return nil, nil, false
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// toKelvin converts a temperature in unit to kelvin.
func toKelvin(v float64, unit string) float64 {
	switch unit {
	case "kelvin":
		return v
	case "fahrenheit":
		return (v-32)*5/9 + 273.15
	}
	return v + 273.15
}

func fromKelvin(k float64, unit string) float64 {
	switch unit {
	case "kelvin":
		return k
	case "fahrenheit":
		return (k-273.15)*9/5 + 32
	}
	return k - 273.15
}

func unitSymbol(u string) string {
	switch u {
	case "celsius":
		return "°C"
	case "kelvin":
		return "K"
	case "fahrenheit":
		return "°F"
	}
	return u
}

func fmtNum(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// inputUnit is the unit named by the "unit" member of parent, or def.
func inputUnit(parent map[string]any, def string) (string, bool) {
	if def == "" {
		def = "celsius"
	}
	u, ok := parent["unit"]
	if !ok {
		return def, true
	}
	s, isStr := u.(string)
	return s, isStr && knownUnit(s)
}

// semantic runs the RangeChecks of capability name on doc; it returns the
// failing paths (JSON Pointers into the payload) and messages.
func semantic(checks []RangeCheck, name string, doc map[string]any) (paths, msgs []string) {
	for _, rc := range checks {
		if rc.Capability != "" && rc.Capability != name {
			continue
		}
		v, _, ok := lookup(doc, rc.Path)
		if !ok {
			continue
		}
		ptr := "/inputs/" + strings.ReplaceAll(rc.Path, ".", "/")
		obj, isObj := v.(map[string]any)
		if !isObj {
			continue // the schema decides what the member may be
		}
		lo, hasLo := number(obj["min"])
		hi, hasHi := number(obj["max"])
		unit := ""
		if rc.Temperature {
			u, ok := inputUnit(obj, rc.DefaultUnit)
			if !ok {
				paths, msgs = append(paths, ptr+"/unit"), append(msgs, fmt.Sprintf("%s: unit %v: want celsius, kelvin or fahrenheit", ptr+"/unit", obj["unit"]))
				continue
			}
			unit = u
			for _, b := range []struct {
				name string
				v    float64
				has  bool
			}{{"min", lo, hasLo}, {"max", hi, hasHi}} {
				if b.has && toKelvin(b.v, unit) < 0 {
					paths, msgs = append(paths, ptr+"/"+b.name), append(msgs, fmt.Sprintf("%s: %s %s is below absolute zero", ptr+"/"+b.name, fmtNum(b.v), unitSymbol(unit)))
				}
			}
		}
		if hasLo && hasHi && lo > hi {
			paths = append(paths, ptr+"/min", ptr+"/max")
			msgs = append(msgs, fmt.Sprintf("%s: min %s is above max %s", ptr, fmtNum(lo), fmtNum(hi)))
		}
	}
	return paths, msgs
}

// escalate evaluates the input-driven rules for capability name; hazards
// are the rig's gas hazard classes, by gas (Config.GasHazards).
func escalate(rules []Escalation, name string, doc map[string]any, hazards map[string]rig.Hazard) []Fired {
	var out []Fired
	for _, r := range rules {
		if r.Capability != "" && r.Capability != name {
			continue
		}
		v, parent, ok := lookup(doc, r.Path)
		if !ok {
			continue
		}
		if r.AtOrAbove != nil {
			x, isNum := number(v)
			if !isNum {
				continue
			}
			limit := *r.AtOrAbove
			remedy := fmt.Sprintf("reduce %s below %s", r.Path, fmtNum(limit))
			if r.Unit != "" {
				u, ok := inputUnit(parent, r.DefaultUnit)
				if !ok {
					continue // refused by the range check; no unit, no comparison
				}
				x = fromKelvin(toKelvin(x, u), r.Unit)
				remedy += " " + unitSymbol(r.Unit)
				if u != r.Unit {
					remedy += fmt.Sprintf(" (%s %s)", fmtNum(fromKelvin(toKelvin(limit, r.Unit), u)), unitSymbol(u))
				}
			}
			if x >= limit {
				out = append(out, Fired{Rule: r.Name, Level: r.Level, Remedy: remedy})
			}
			continue
		}
		var vals []string
		switch t := v.(type) {
		case string:
			vals = []string{t}
		case []any:
			for _, e := range t {
				if s, ok := e.(string); ok {
					vals = append(vals, s)
				}
			}
		}
		for _, s := range vals {
			if slices.Contains(r.Equals, s) {
				out = append(out, Fired{Rule: r.Name, Level: r.Level, Remedy: fmt.Sprintf("use a %s other than %s", r.Path, s)})
				break
			}
			if h := hazards[s]; h != "" && slices.Contains(r.Hazards, h) {
				out = append(out, Fired{Rule: r.Name, Level: r.Level, Remedy: fmt.Sprintf("use a %s that is not %s (%s is)", r.Path, h, s)})
				break
			}
		}
	}
	return out
}

// attended reports whether t falls in an attended window.
func attended(wins []window, loc *time.Location, t time.Time) bool {
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	for _, w := range wins {
		if w.days[lt.Weekday()] && m >= w.start && m < w.end {
			return true
		}
	}
	return false
}

// derivedFloor is the static floor when the configuration names none:
// R1 for a capability that moves nothing, R2 for one that does, R3 for one
// that also declares hazards; never above the declared ceiling.
func derivedFloor(c *capability.Capability) capability.RiskLevel {
	f := capability.R1
	switch {
	case c.Safety.InvolvesPhysicalResources && len(c.Safety.HazardCategories) > 0:
		f = capability.R3
	case c.Safety.InvolvesPhysicalResources:
		f = capability.R2
	}
	if c.Safety.RiskCeiling.Rank() < f.Rank() {
		return c.Safety.RiskCeiling
	}
	return f
}

// derivedPermissions are a capability's catalog permissions when the
// configuration names none: rig.read always; rig.operate for physical
// resources; rig.gas for a gas_supply; rig.measure for a spectrometer.
func derivedPermissions(c *capability.Capability) []catalog.Permission {
	p := []catalog.Permission{catalog.PermissionRead}
	if c.Safety.InvolvesPhysicalResources {
		p = append(p, catalog.PermissionOperate)
	}
	for _, r := range c.Safety.ResourceTypes {
		switch r {
		case "gas_supply":
			p = append(p, catalog.PermissionGas)
		case "spectrometer", "raman_spectrometer":
			p = append(p, catalog.PermissionMeasure)
		}
	}
	slices.Sort(p)
	return slices.Compact(p)
}

func maxLevel(a, b capability.RiskLevel) capability.RiskLevel {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

func minLevel(a, b capability.RiskLevel) capability.RiskLevel {
	if b.Rank() < a.Rank() {
		return b
	}
	return a
}

// suggest names what to change so that the task qualifies for a level at
// or below allowed: every avoidable rule above allowed is dropped; "" when
// that is not enough.
func suggest(floor capability.RiskLevel, fired []Fired, allowed capability.RiskLevel) string {
	level := floor
	var remedies []string
	for _, f := range fired {
		if f.Level.Rank() > allowed.Rank() && f.Remedy != "" {
			remedies = append(remedies, f.Remedy)
			continue
		}
		level = maxLevel(level, f.Level)
	}
	if len(remedies) == 0 || level.Rank() > allowed.Rank() {
		return ""
	}
	return strings.Join(remedies, " and ") + " to qualify for " + string(level)
}
