package serialsim

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"hcp-edge/firmware-sim/plant"
)

// bandOf is the height above the flat background and the full width at
// half maximum of the highest band in lo..hi of noise-free rates.
func bandOf(rates []float64, w Window, lo, hi float64) (height, fwhm float64) {
	best := -1
	for i := range rates {
		if x := w.At(i); x >= lo && x <= hi && (best < 0 || rates[i] > rates[best]) {
			best = i
		}
	}
	height = rates[best] - grBgRate
	half := grBgRate + height/2
	l, r := best, best
	for l > 0 && rates[l] > half {
		l--
	}
	for r < len(rates)-1 && rates[r] > half {
		r++
	}
	return height, w.At(r) - w.At(l)
}

func TestGrapheneSpectrumBands(t *testing.T) {
	w := GrapheneWindow
	if w.At(0) != 1100 || w.At(w.Points-1) != 3000 {
		t.Fatalf("window %v..%v", w.At(0), w.At(w.Points-1))
	}
	mono := grapheneRates(plant.Film{Graphene: 1, GrapheneDG: 0.05}, w)
	g, gw := bandOf(mono, w, 1500, 1650)
	d2, d2w := bandOf(mono, w, 2600, 2800)
	d, _ := bandOf(mono, w, 1300, 1400)
	t.Logf("monolayer: G %.0f (FWHM %.0f), 2D %.0f (FWHM %.0f), 2D/G %.2f, D/G %.3f", g, gw, d2, d2w, d2/g, d/g)
	if r := d2 / g; r < 1.8 || r > 3 {
		t.Fatalf("monolayer 2D/G %.2f, want about 2", r)
	}
	if d2w < 24 || d2w > 36 || gw < 10 || gw > 20 {
		t.Fatalf("monolayer widths: 2D %v G %v", d2w, gw)
	}
	if math.Abs(d/g-0.05) > 0.01 {
		t.Fatalf("D/G %.3f, want 0.05", d/g)
	}
	bi := grapheneRates(plant.Film{Graphene: 1, GrapheneBilayer: 1}, w)
	bg, _ := bandOf(bi, w, 1500, 1650)
	b2, b2w := bandOf(bi, w, 2600, 2800)
	t.Logf("bilayer: G %.0f, 2D %.0f (FWHM %.0f), 2D/G %.2f", bg, b2, b2w, b2/bg)
	if b2/bg > 1.2 || b2w < 45 || bg < 1.8*g {
		t.Fatalf("bilayer: 2D/G %.2f, 2D FWHM %v, G %v against the monolayer's %v", b2/bg, b2w, bg, g)
	}
	bare := grapheneRates(plant.Film{}, w)
	for i, r := range bare {
		if r != grBgRate {
			t.Fatalf("bare copper shows %v at %v", r, w.At(i))
		}
	}
}

func TestGrapheneSpectrumEffectsAndTruth(t *testing.T) {
	f := plant.Film{Graphene: 0.9, GrapheneBilayer: 0.2, GrapheneDG: 0.04, GrapheneDomainUM: 15}
	e := Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 2, Spikes: 5, FullWell: 20000}, Sample: 7}
	shift, c1, tr := GrapheneSpectrum(f, 1000, 3, e)
	_, c2, _ := GrapheneSpectrum(f, 1000, 3, e)
	if len(shift) != GrapheneWindow.Points || shift[0] != 1100 || tr.LayerCount != 1 || tr.Material != "graphene" {
		t.Fatalf("%d points from %v, truth %+v", len(shift), shift[0], tr)
	}
	for i := range c1 {
		if c1[i] != c2[i] {
			t.Fatal("same seed, different spectra")
		}
		if c1[i] > 20000 {
			t.Fatalf("count %d above the full well", c1[i])
		}
	}
	_, plain, _ := GrapheneSpectrum(f, 1000, 3, Effects{})
	var sumE, sumP uint64
	for i := range plain {
		sumE, sumP = sumE+c1[i], sumP+plain[i]
	}
	if sumE <= sumP {
		t.Fatal("the background added nothing")
	}
}

func TestGrapheneRigInstruments(t *testing.T) {
	o := plant.DefaultOpts()
	o.Rig = plant.RigGraphene
	p, err := plant.New(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	set, err := StartAll(context.Background(), p, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := os.Lstat(filepath.Join(dir, LinkMFCH2S)); !os.IsNotExist(err) {
		t.Fatalf("the graphene rig serves %s: %v", LinkMFCH2S, err)
	}
	c := dial(t, filepath.Join(dir, "mfc-ch4"))
	c.send("C\r")
	if got := c.readTo('\r'); !frameRE.MatchString(got) || got[:1] != "C" {
		t.Fatalf("mfc-ch4: %q", got)
	}
	r := dial(t, filepath.Join(dir, LinkRaman))
	r.send("ACQ 100\r\n")
	b, err := r.readBlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.shifts) != GrapheneWindow.Points || b.shifts[0] != 1100 || b.shifts[len(b.shifts)-1] != 3000 {
		t.Fatalf("graphene rig's spectrum: %d points, %v..%v", len(b.shifts), b.shifts[0], b.shifts[len(b.shifts)-1])
	}
}
