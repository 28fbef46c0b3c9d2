package plant

import (
	"fmt"
	"strings"
	"time"
)

// What the simulator's commands and test support say about a rig without
// naming its process: the names and the process facts stay in
// firmware-sim, and cmd/rig-sim and cmd/hiltest/hilbench read them here.

// DefaultRig is the rig a plant simulates when none is named (Opts.Rig "",
// ParseRig("")): the first of Rigs.
const DefaultRig = RigMoS2

// RigUsage is the help of rig-sim's --rig flag: every rig, with the
// configuration that describes it and what choosing it implies.
func RigUsage() string {
	var parts []string
	for _, r := range Rigs {
		s := string(r) + " (" + r.config()
		if m, ok := r.Models(); ok {
			s += fmt.Sprintf("; implies --furnace-model %s --dio-model %s --relay-watchdog %s", m.Furnace, m.DIO, m.RelayWatchdog)
			if m.Gauge != "" {
				s += " --gauge-model " + m.Gauge
			}
			s += " unless they are given"
		}
		parts = append(parts, s+")")
	}
	return "the rig: " + strings.Join(parts, " or ")
}

// config is r's shipped configuration, as the help names it.
func (r Rig) config() string {
	switch r {
	case RigGraphene:
		return "configs/graphene.yaml: Ar, H2, CH4, no scrubber"
	case RigMoS2TwoZone:
		return "configs/mos2-two-zone.yaml: sulfur and growth zones on one RS-485 line at units 1 and 2, Ar carrier"
	}
	return "configs/sim.yaml"
}

// PrecursorUsage is the help of rig-sim's --precursor flag: each
// precursor and what it grows.
func PrecursorUsage() string {
	var parts []string
	for _, pr := range Precursors {
		if m, err := pr.Material(); err == nil {
			parts = append(parts, fmt.Sprintf("%s (grows %s)", pr, m))
		}
	}
	return "what the precursor boat holds: " + strings.Join(parts, " or ")
}

// RigModels are the instruments a rig's shipped configuration names, which
// rig-sim brings up for it unless its flags say otherwise.
type RigModels struct {
	Furnace       FurnaceModel
	DIO           DIOModel
	RelayWatchdog time.Duration
	// Gauge is the gauge controller's model, as rig-sim's --gauge-model
	// names it ("": the flag's default).
	Gauge string
}

// Models returns the instruments r's configuration names; ok is false for
// a rig on the simulator's own maps (the flags' defaults).
func (r Rig) Models() (RigModels, bool) {
	switch r {
	case RigGraphene:
		return RigModels{Furnace: FurnaceEurotherm3200, DIO: DIOADAM6052, RelayWatchdog: 2 * time.Second}, true
	case RigMoS2TwoZone:
		return RigModels{Furnace: FurnaceEurotherm3200, DIO: DIOADAM6052, RelayWatchdog: 2 * time.Second, Gauge: "tpg262"}, true
	}
	return RigModels{}, false
}

// GrowthSummary is the growth line of rig-sim status: the film grown, in
// the words of s's rig.
func (s Snapshot) GrowthSummary() string {
	material := s.Material
	if material == "" {
		material = "none"
	}
	if s.Rig == RigGraphene {
		return fmt.Sprintf("rig graphene: %.3f layers, material %s (coverage %.3f, bilayer %.3f, domains %.1f µm, D/G %.3f), foil melted %t",
			s.Layers, material, s.Film.Graphene, s.Film.GrapheneBilayer, s.Film.GrapheneDomainUM, s.Film.GrapheneDG, s.FoilMelted)
	}
	return fmt.Sprintf("%.3f layers, material %s (MoS2 %.3f, WS2 %.3f), precursor %s",
		s.Layers, material, s.Film.MoS2, s.Film.WS2, s.Precursor) + s.zonesSummary()
}

// ReactiveExposureSCCMs is what the growth received: the sccm·s of the
// reactive gas (the third line) that flowed into the chamber on the
// default rig, which a recipe plans as flow × hold time.
func (s Snapshot) ReactiveExposureSCCMs() float64 {
	if s.Solid != nil {
		return s.Solid.DeliveredSCCMs // the sulfur atoms the carrier brought
	}
	return s.H2SExposureSCCMs
}
