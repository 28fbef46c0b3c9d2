package plant

import (
	"testing"
	"time"
)

// TestSummaryWords: rig-sim's help and status line, now built here, read
// as they did when cmd/rig-sim wrote them.
func TestSummaryWords(t *testing.T) {
	if got, want := RigUsage(), "the rig: mos2 (configs/sim.yaml) or graphene (configs/graphene.yaml: Ar, H2, CH4, no scrubber; implies --furnace-model eurotherm3200 --dio-model adam6052 --relay-watchdog 2s unless they are given)"+
		" or mos2-two-zone (configs/mos2-two-zone.yaml: sulfur and growth zones on one RS-485 line at units 1 and 2, Ar carrier; implies --furnace-model eurotherm3200 --dio-model adam6052 --relay-watchdog 2s --gauge-model tpg262 unless they are given)"; got != want {
		t.Errorf("RigUsage:\n%s\nwant\n%s", got, want)
	}
	if got, want := PrecursorUsage(), "what the precursor boat holds: MoO3 (grows MoS2) or WO3 (grows WS2)"; got != want {
		t.Errorf("PrecursorUsage %q, want %q", got, want)
	}
	if DefaultRig != Rigs[0] {
		t.Errorf("DefaultRig %s, Rigs %v", DefaultRig, Rigs)
	}
	if m, ok := RigGraphene.Models(); !ok || m != (RigModels{FurnaceEurotherm3200, DIOADAM6052, 2 * time.Second, ""}) {
		t.Errorf("graphene models %+v %v", m, ok)
	}
	if _, ok := RigMoS2.Models(); ok {
		t.Error("the default rig implies models")
	}
	s := Snapshot{Layers: 0.9, Material: "MoS2", Film: Film{MoS2: 0.9}, Precursor: MoO3, Rig: RigMoS2, H2SExposureSCCMs: 2700}
	if got, want := s.GrowthSummary(), "0.900 layers, material MoS2 (MoS2 0.900, WS2 0.000), precursor MoO3"; got != want {
		t.Errorf("GrowthSummary %q, want %q", got, want)
	}
	if s.ReactiveExposureSCCMs() != 2700 {
		t.Errorf("ReactiveExposureSCCMs %v", s.ReactiveExposureSCCMs())
	}
	g := Snapshot{Rig: RigGraphene}
	if got, want := g.GrowthSummary(), "rig graphene: 0.000 layers, material none (coverage 0.000, bilayer 0.000, domains 0.0 µm, D/G 0.000), foil melted false"; got != want {
		t.Errorf("GrowthSummary %q, want %q", got, want)
	}
}
