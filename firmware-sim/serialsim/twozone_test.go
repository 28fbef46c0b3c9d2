package serialsim

import (
	"math"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// TestTwoZoneRaman: the two-zone rig's film is MoS2 and reads as MoS2 on
// the same spectrometer window: its strongest band in the TMD window is
// the A1g of the layers grown, within a point or two.
func TestTwoZoneRaman(t *testing.T) {
	if WindowFor(plant.RigMoS2TwoZone) != TMDWindow {
		t.Fatalf("window %+v", WindowFor(plant.RigMoS2TwoZone))
	}
	p, err := plant.New(plant.Opts{Rig: plant.RigMoS2TwoZone, FurnaceModel: plant.FurnaceEurotherm3200, RelayEnergised: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.DIOWriteCoils("test", plant.CoilArValve, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMFCSetpoint("ar", 100); err != nil {
		t.Fatal(err)
	}
	auto := func(zone int, spC float64) {
		for _, w := range [][2]int{{plant.EuroTargetSP, int(spC * 10)}, {plant.EuroAutoManual, 0}} {
			if err := p.ZoneWrite(zone, "rtu", w[0], []uint16{uint16(w[1])}); err != nil {
				t.Fatal(err)
			}
		}
	}
	auto(1, 750) // growth
	p.Step(3 * time.Hour)
	auto(0, 200) // sulfur
	p.Step(30 * time.Minute)
	f := p.Film()
	if f.Material() != string(plant.MoS2) || f.MoS2 < 0.5 {
		t.Fatalf("film %+v", f)
	}
	shift, counts := Spectrum(f, 5000, 1)
	best := 0
	for i := range counts {
		if shift[i] > 300 && shift[i] < 450 && counts[i] > counts[best] {
			best = i
		}
	}
	if _, a1g := MoS2Peaks(f.Layers()); math.Abs(shift[best]-a1g) > 1.5 {
		t.Errorf("strongest band at %.1f cm⁻¹, the A1g of %.2f layers of MoS2 is at %.1f", shift[best], f.Layers(), a1g)
	}
}
