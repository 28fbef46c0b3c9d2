package envelope

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// CoverageEntry is one writable channel of the rig (or one write a driver
// makes by itself) with where it lands and every envelope rule that bounds it.
type CoverageEntry struct {
	Channel string   `json:"channel"`
	Wire    string   `json:"wire,omitempty"`
	Rules   []string `json:"rules"`
}

// Coverage lists every writable channel of the rig, sorted, with the rules
// that bound it, followed by the driver-internal writes. Compile guarantees
// that no writable channel has an empty Rules.
func (e *Envelope) Coverage() []CoverageEntry {
	var out []CoverageEntry
	for _, ch := range e.spec.WritableChannels() {
		out = append(out, CoverageEntry{Channel: ch, Wire: e.spec.Wires[ch], Rules: e.rulesFor(ch)})
	}
	for _, w := range e.spec.Internal {
		out = append(out, CoverageEntry{Channel: w.Channel, Wire: w.Wire,
			Rules: []string{"driver-internal, not reachable through Apply: " + w.Reason}})
	}
	return out
}

// WriteCoverage prints entries as an aligned table, one line per rule.
func WriteCoverage(w io.Writer, entries []CoverageEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tWIRE\tBOUNDED BY")
	for _, en := range entries {
		for i, r := range en.Rules {
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Channel, en.Wire, r)
			} else {
				fmt.Fprintf(tw, "\t\t%s\n", r)
			}
		}
	}
	return tw.Flush()
}

func (l *limit) describe() []string {
	lo, hi := display(l.kind, l.min, l.unit), display(l.kind, l.max, l.unit)
	out := []string{fmt.Sprintf("%s: hard limit %s .. %s %s", "parameter", fmtNum(lo), fmtNum(hi), l.unit)}
	if l.rate > 0 {
		out = append(out, fmt.Sprintf("%s: %s %s per minute", RuleRate, fmtNum(deltaFromDevice(l.kind, l.rate, l.unit)), l.unit))
	}
	return out
}

// rulesFor lists the rules bounding a writable channel.
func (e *Envelope) rulesFor(ch string) []string {
	var out []string
	if l := e.limits[ch]; l != nil {
		out = append(out, l.describe()...)
	}
	heater := func() {
		if h := e.heater; h != nil {
			out = append(out, fmt.Sprintf("interlock %s: chamber ≤ %s %s or %s ≥ %s %s", RuleHeater,
				fmtNum(display(kindPressure, float64(h.maxPressure), h.pUnit)), h.pUnit, h.inertGas,
				fmtNum(display(kindFlow, float64(h.minInertFlow), h.fUnit)), h.fUnit))
		}
	}
	gas := func(g string) {
		if r := e.gasRules[g]; r != nil {
			s := fmt.Sprintf("interlock %s: chamber ≤ %s %s", g, fmtNum(display(kindPressure, float64(r.maxPressure), r.pUnit)), r.pUnit)
			for _, sw := range r.switches {
				s += ", " + sw + " on"
			}
			for _, in := range r.inputs {
				s += fmt.Sprintf(", %s = %v", in, r.levels[in])
			}
			if r.hasMinTemp {
				s += fmt.Sprintf(", furnace heating at ≥ %s %s", fmtNum(display(kindTemperature, float64(r.minTemp), r.tUnit)), r.tUnit)
			}
			out = append(out, s)
		}
		if e.prohibited[RuleMixing] && slices.Contains(e.reactive, g) {
			out = append(out, "prohibited "+string(RuleMixing))
		}
	}
	zn, what, _ := strings.Cut(ch, ".")
	switch {
	case (what == ZoneHeater || what == ZoneSetpoint) && e.zoneIndex(zn) >= 0:
		heater()
	case strings.HasPrefix(ch, "flow."):
		gas(strings.TrimPrefix(ch, "flow."))
	case strings.HasPrefix(ch, "switch."):
		name := strings.TrimPrefix(ch, "switch.")
		if e.switches[name].InterlockOwned {
			out = append(out, string(RuleInterlockOwned)+": driven only by Arm and the halt paths")
			break
		}
		if g, ok := e.gasOfValve[name]; ok {
			gas(g)
		}
		if v := e.vent; v != nil && name == v.valve {
			for _, r := range []Rule{RuleVentHot, RuleVentGas, RuleVentPumping, RuleVentPurge} {
				if e.prohibited[r] {
					s := "prohibited " + string(r)
					if r == RuleVentHot {
						s += fmt.Sprintf(" (above %s %s or heater enabled)", fmtNum(display(kindTemperature, float64(v.maxTemp), v.tUnit)), v.tUnit)
					}
					if r == RuleVentPurge {
						s += " (" + strings.Join(e.ventPurged, ", ") + " used since the last purge)"
					}
					out = append(out, s)
				}
			}
		}
		if v := e.vent; v != nil && name == v.gate && e.prohibited[RuleVentPumping] {
			out = append(out, "prohibited "+string(RuleVentPumping)+" (gate valve with the vent valve open)")
		}
		for _, g := range e.requiredBy[name] {
			out = append(out, fmt.Sprintf("%s: stays on while %s is in use", RuleRequiredOutput, g))
		}
	}
	if why, ok := e.unrestricted[ch]; ok {
		out = append(out, "unrestricted: "+why)
	}
	return out
}
