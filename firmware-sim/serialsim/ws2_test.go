package serialsim

import (
	"math"
	"testing"

	"hcp-edge/firmware-sim/plant"
)

func TestRamanWS2PeakPositions(t *testing.T) {
	tests := []struct {
		name     string
		layers   float64
		e2g, a1g float64
	}{
		{"monolayer", 1, 357.0, 418.0},
		{"bilayer", 2, 356.5, 419.3},
		{"three layers", 3, 356.0, 419.9},
		{"bulk", 4, 355.5, 420.5},
		{"thick bulk", 9, 355.5, 420.5},
	}
	p := newFakePlant()
	c := startRaman(t, p)
	var siPrev uint64 = math.MaxUint64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			p.set(func(p *fakePlant) { p.layers, p.ws2 = 0, tt.layers })
			c.send("ACQ 2000\r\n")
			b, err := c.readBlock()
			if err != nil {
				t.Fatal(err)
			}
			e2g, a1g := peakIn(b, 345, 370), peakIn(b, 405, 430)
			if math.Abs(e2g-tt.e2g) > 0.3 || math.Abs(a1g-tt.a1g) > 0.3 {
				t.Fatalf("E2g %.2f A1g %.2f, want %.1f %.1f", e2g, a1g, tt.e2g, tt.a1g)
			}
			if d := a1g - e2g; d < 60.5 || d > 65.5 {
				t.Fatalf("distance %.2f", d)
			}
			if si := peakIn(b, 510, 530); math.Abs(si-520.7) > 0.3 {
				t.Fatalf("Si peak at %.2f", si)
			}
			siHeight := b.counts[int((520.5-ShiftFirst)/ShiftStep)]
			if siHeight >= siPrev {
				t.Fatalf("Si peak %d did not weaken (was %d)", siHeight, siPrev)
			}
			siPrev = siHeight
		})
	}
}

// TestWS2ShowsNoMoS2Bands: a WS2 film shows nothing at MoS2's bands, and an
// MoS2 film nothing at WS2's; a film of both shows both pairs.
func TestWS2ShowsNoMoS2Bands(t *testing.T) {
	at := func(rates []float64, x float64) float64 { return rates[int((x-ShiftFirst)/ShiftStep)] }
	bare := expectedRates(plant.Film{})
	ws2 := expectedRates(plant.Film{WS2: 2})
	mos2 := expectedRates(plant.Film{MoS2: 2})
	both := expectedRates(plant.Film{MoS2: 1, WS2: 1})
	// Relative to the bare substrate: the background is shared.
	above := func(r []float64, x float64) float64 { return at(r, x) - at(bare, x) }
	for _, x := range []float64{383.5, 405.5} {
		if a := above(ws2, x); a > 0.03*above(mos2, x) {
			t.Errorf("WS2 film at %v cm⁻¹: %.1f above the substrate (MoS2 %.1f)", x, a, above(mos2, x))
		}
	}
	for _, x := range []float64{356.5, 419.5} {
		if a := above(mos2, x); a > 0.03*above(ws2, x) {
			t.Errorf("MoS2 film at %v cm⁻¹: %.1f above the substrate (WS2 %.1f)", x, a, above(ws2, x))
		}
	}
	for _, x := range []float64{357, 418, 385, 404} {
		if above(both, x) < 1000 {
			t.Errorf("MoS2+WS2 film: only %.1f at %v cm⁻¹", above(both, x), x)
		}
	}
	if r := expectedRates(plant.Film{WS2: 0.1}); above(r, 357) > 1 || above(r, 418) > 1 {
		t.Error("a tenth of a layer of WS2 shows bands")
	}
}

func TestWS2Peaks(t *testing.T) {
	tests := []struct {
		layers, e2g, a1g float64
	}{
		{0, 357.0, 418.0},
		{1, 357.0, 418.0},
		{1.5, 356.75, 418.65},
		{2, 356.5, 419.3},
		{4, 355.5, 420.5},
		{12, 355.5, 420.5},
		{math.NaN(), 357.0, 418.0},
	}
	for _, tt := range tests {
		e, a := WS2Peaks(tt.layers)
		if math.Abs(e-tt.e2g) > 1e-9 || math.Abs(a-tt.a1g) > 1e-9 {
			t.Errorf("WS2Peaks(%v) = %v, %v", tt.layers, e, a)
		}
	}
	// The separation grows with every layer, from about 61 to about 65 cm⁻¹.
	prev := 0.0
	for l := 1.0; l <= 4; l += 0.25 {
		e, a := WS2Peaks(l)
		if d := a - e; d <= prev {
			t.Fatalf("separation %.2f at %v layers after %.2f", d, l, prev)
		} else {
			prev = d
		}
	}
	if e, a := WS2Peaks(1); a-e != 61 {
		t.Fatalf("monolayer separation %v", a-e)
	}
	if e, a := WS2Peaks(4); a-e != 65 {
		t.Fatalf("bulk separation %v", a-e)
	}
}
