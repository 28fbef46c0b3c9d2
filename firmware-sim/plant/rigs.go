package plant

import (
	"errors"
	"fmt"
	"strings"
)

// Rig is which rig the plant is: the gases on its mass-flow controllers,
// the names of its outputs, its heated zones and what grows on the sample.
// The furnace, the chamber, the pump and the I/O module are the same on all.
type Rig string

// The rigs the plant simulates.
const (
	// RigMoS2 is the sulfurization rig of configs/sim.yaml (the default):
	// Ar, H2 and H2S lines, a scrubber, a precursor boat (MoO3 or WO3)
	// sulfurized into MoS2 or WS2 on Si/SiO2.
	RigMoS2 Rig = "mos2"
	// RigGraphene is the graphene-on-copper rig of configs/graphene.yaml:
	// Ar, H2 and CH4 lines (CH4 on the third controller and the third line
	// valve, coil 4), no scrubber (coil 6 is wired to nothing), and
	// low-pressure CVD of graphene from CH4 on copper foil (graphene.go).
	RigGraphene Rig = "graphene"
	// RigMoS2TwoZone is MoS2 from solid precursors in a two-zone furnace
	// (twozone.go): sulfur powder in an upstream zone, MoO3 and the
	// substrate in the growth zone, each zone on its own Eurotherm 3200,
	// both on one RS-485 line (the sulfur zone's at unit 1, the growth
	// zone's at 2); one gas line, the Ar carrier (the first controller;
	// the second and third are not fitted), no H2S.
	RigMoS2TwoZone Rig = "mos2-two-zone"
)

// Rigs lists the rigs, the default first.
var Rigs = []Rig{RigMoS2, RigGraphene, RigMoS2TwoZone}

// ErrUnknownRig: not a rig the plant simulates.
var ErrUnknownRig = errors.New("plant: unknown rig")

// ParseRig parses a --rig value ("" is RigMoS2; any case).
func ParseRig(s string) (Rig, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return RigMoS2, nil
	}
	for _, r := range Rigs {
		if string(r) == t {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want one of %v)", ErrUnknownRig, s, Rigs)
}

// rigGases is each rig's three controllers: the plant's key (the serial
// link is mfc-<key>), the display name, the Alicat unit id and the range.
var rigGases = map[Rig][numGases]MFCState{
	RigMoS2: {
		{Gas: "Ar", UnitID: 'A', FullScaleSCCM: 500},
		{Gas: "H2", UnitID: 'B', FullScaleSCCM: 200},
		{Gas: "H2S", UnitID: 'C', FullScaleSCCM: 50},
	},
	RigGraphene: {
		{Gas: "Ar", UnitID: 'A', FullScaleSCCM: 500},
		{Gas: "H2", UnitID: 'B', FullScaleSCCM: 200},
		{Gas: "CH4", UnitID: 'C', FullScaleSCCM: 100},
	},
	RigMoS2TwoZone: {
		{Gas: "Ar", UnitID: 'A', FullScaleSCCM: 500},
	},
}

// Rig is the rig the plant simulates (fixed at New).
func (p *Plant) Rig() Rig { return p.opts.Rig }

// Gases are the plant's gas keys in controller order ("ar", "h2", then
// "h2s" or "ch4"; "ar" alone on the two-zone rig): MFC, SetMFCSetpoint and
// the mfc-stuck-open fault take them, and each controller's serial link is
// mfc-<key>.
func (p *Plant) Gases() []string {
	n := 0
	for n < numGases && p.gasKeys[n] != "" {
		n++
	}
	return p.gasKeys[:n]
}

// Devices lists the device names a silent or corrupt fault may target on
// this plant: Devices with this rig's controllers.
func (p *Plant) Devices() []string {
	out := []string{"furnace", "dio"}
	if zs := p.Zones(); len(zs) > 0 {
		out = out[1:]
		for i := range zs {
			out = append(out, p.ZoneDevice(i))
		}
	}
	for _, g := range p.Gases() {
		out = append(out, "mfc-"+g)
	}
	return append(out, "gauge", "raman")
}

// CoilName is the write-log channel of coil addr on this plant's rig, e.g.
// "coil:ch4_valve" for coil 4 of the graphene rig.
func (p *Plant) CoilName(addr int) string {
	if addr >= 0 && addr < NumCoils {
		return "coil:" + p.coilNames[addr]
	}
	return CoilName(addr)
}

// ADAMChannel is the package's ADAMChannel with this rig's coil names.
func (p *Plant) ADAMChannel(addr int) string {
	if n := addr - ADAMDOBase; n >= 0 && n < NumCoils {
		return p.CoilName(n)
	}
	return ADAMChannel(addr)
}

// RigFor returns the rig whose controllers carry gases (a configuration's
// gas lines, any case and order): the layout chooses the simulated rig, no
// rig is named by its user. A rig with exactly those lines wins; else the
// first (in Rigs) that has them all. An error wraps ErrUnknownRig when no
// rig has those lines.
func RigFor(gases []string) (Rig, error) {
	want := map[string]bool{}
	for _, g := range gases {
		want[strings.ToLower(strings.TrimSpace(g))] = true
	}
	for _, exact := range []bool{true, false} {
		for _, r := range Rigs {
			ok, n := len(want) > 0, 0
			for _, m := range rigGases[r] {
				if m.Gas != "" {
					n++
				}
			}
			for g := range want {
				found := false
				for _, m := range rigGases[r] {
					found = found || (m.Gas != "" && strings.ToLower(m.Gas) == g)
				}
				ok = ok && found
			}
			if ok && (!exact || n == len(want)) {
				return r, nil
			}
		}
	}
	return "", fmt.Errorf("%w: no simulated rig has the gas lines %v", ErrUnknownRig, gases)
}

// Grows reports whether the plant of rig r grows material m (any case),
// and from which precursor in the boat ("" when it needs none: the
// graphene rig grows graphene from CH4 on its copper foil).
func (r Rig) Grows(m string) (Precursor, bool) {
	switch r {
	case RigGraphene:
		return "", strings.EqualFold(m, string(GrapheneMaterial))
	case RigMoS2, RigMoS2TwoZone:
		for _, pr := range Precursors {
			if g, err := pr.Material(); err == nil && strings.EqualFold(m, string(g)) {
				return pr, true
			}
		}
	}
	return "", false
}

// Grown lists what rig r grows, each with its precursor ("" none), e.g.
// "MoS2 from MoO3".
func (r Rig) Grown() []string {
	if r == RigGraphene {
		return []string{string(GrapheneMaterial) + " from CH4 on the copper foil"}
	}
	var out []string
	for _, pr := range Precursors {
		if g, err := pr.Material(); err == nil {
			out = append(out, fmt.Sprintf("%s from %s", g, pr))
		}
	}
	return out
}
