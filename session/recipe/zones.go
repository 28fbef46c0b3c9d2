package recipe

import (
	"slices"
	"sort"
	"strings"

	"hcp-edge/envelope"
)

// The heated zones a recipe names: a ramp, a hold or a cool acts on the
// zone of its zone: key (zone: growth), or on the rig's only zone when it
// has none, so that a recipe written for a one-zone rig runs unchanged.
// Check refuses a zone the rig lacks at the line of the zone: key, as it
// refuses a gas line the rig lacks (RuleRig).

// zoned reports whether a phase of kind k heats, holds at or cools a zone
// (and so takes a zone: key).
func zoned(k Kind) bool { return k == KindRamp || k == KindHold || k == KindCool }

// zone decodes a phase's zone: key: a zone's name.
func (d *decoder) zone(p *PhaseSpec, e entry) {
	z, ok := d.str(e)
	if !ok {
		return
	}
	p.Zone, p.zoneAt = z, &origin{line: e.k.Line, col: e.k.Column, key: e.key}
}

// Zones returns the heated zones of the rig an envelope is compiled for,
// sorted: the zones whose setpoint the envelope bounds (each zone's
// <zone>.setpoint is a writable channel, and the envelope compiles only
// with a limit on every writable channel). Today's rigs have one zone,
// named furnace (envelope.ChannelSetpoint).
func Zones(env *envelope.Envelope) []string {
	var zs []string
	for ch := range env.Config().Parameters {
		if z, ok := strings.CutSuffix(ch, ".setpoint"); ok && z != "" {
			zs = append(zs, z)
		}
	}
	sort.Strings(zs)
	return zs
}

// zoneOf is the zone a ramp or a cool of the model acts on: the one it
// names, else one of the rig's zones (a zone the rig lacks, or none named on
// a rig of several, is reported by zones, once).
func (c *checker) zoneOf(s *PhaseSpec) string {
	zs := Zones(c.env)
	if slices.Contains(zs, s.Zone) || len(zs) == 0 {
		return s.Zone
	}
	return zs[0]
}

// zones refuses a phase naming a zone the rig lacks, and a phase naming no
// zone on a rig of several (which of them it would heat is not said).
func (c *checker) zones() { c.zonesOf(Zones(c.env)) }

// CheckZones is Check's refusal of the zones alone, without an envelope,
// on a rig of the heated zones zs: a phase naming a zone not among them,
// at its zone: key's line, and a phase naming none when there are several.
// `recipe simulate` refuses such a recipe before previewing it.
func CheckZones(r *Recipe, zs []string) Problems {
	c := &checker{r: r, found: map[[3]any]*found{}}
	c.zonesOf(zs)
	return c.finish(1)
}

// zonesOf is zones on a rig of the zones zs.
func (c *checker) zonesOf(zs []string) {
	for _, s := range c.r.Phases {
		if !zoned(s.Kind) {
			continue
		}
		c.zoneLost = c.zoneLost || s.Zone == "" && len(zs) > 1 || s.Zone != "" && !slices.Contains(zs, s.Zone)
		switch {
		case s.Zone == "" && len(zs) > 1:
			c.add(phaseOrigin(s), RuleRig, "this rig has %d heated zones (%s): say which one the %s acts on (zone: NAME)",
				len(zs), strings.Join(zs, ", "), s.Kind)
		case s.Zone != "" && !slices.Contains(zs, s.Zone):
			c.add(*s.zoneAt, RuleRig, "this rig has no zone %s (zones: %s)", s.Zone, strings.Join(zs, ", "))
		}
	}
}

// ZonesOf returns the zones a recipe's phases name (zone:), sorted, each
// once; none for a recipe written for a one-zone rig.
func ZonesOf(r *Recipe) []string {
	var zs []string
	for _, s := range r.Phases {
		if s.Zone != "" && !slices.Contains(zs, s.Zone) {
			zs = append(zs, s.Zone)
		}
	}
	sort.Strings(zs)
	return zs
}
