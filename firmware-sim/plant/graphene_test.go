package plant

import (
	"errors"
	"math"
	"testing"
	"time"
)

func newGraphenePlant(t *testing.T) *Plant {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{Rig: RigGraphene, RelayEnergised: true, Now: clk.Now, MaxWrites: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// growGraphene heats the graphene plant to sp (0.1 °C) under Ar and H2,
// anneals, then lets ch4 sccm of CH4 in with h2 sccm of H2 for d, and
// returns the film.
func growGraphene(t *testing.T, p *Plant, sp uint16, ch4, h2 float64, d time.Duration) Film {
	t.Helper()
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRSetpoint, sp, 0, 1)
	if err := p.DIOWriteCoils("tcp", CoilPump, []bool{true, true, true, true}); err != nil {
		t.Fatal(err)
	}
	for g, f := range map[string]float64{"ar": 50, "h2": h2} {
		if err := p.SetMFCSetpoint(g, f); err != nil {
			t.Fatal(err)
		}
	}
	p.Step(2 * time.Hour) // heat up, settle and anneal
	if f := p.Film(); f.Graphene != 0 {
		t.Fatalf("graphene without CH4: %+v", f)
	}
	if err := p.SetMFCSetpoint("ch4", ch4); err != nil {
		t.Fatal(err)
	}
	if err := p.DIOWriteCoils("tcp", CoilH2SValve, []bool{true}); err != nil {
		t.Fatal(err)
	}
	p.Step(d)
	_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{false})
	p.Step(time.Minute)
	return p.Film()
}

func TestGrapheneRigGases(t *testing.T) {
	p := newGraphenePlant(t)
	if got := p.Gases(); len(got) != 3 || got[2] != "ch4" {
		t.Fatalf("gases %v", got)
	}
	if _, ok := p.MFC("h2s"); ok {
		t.Fatal("the graphene rig has an H2S controller")
	}
	m, ok := p.MFC("CH4")
	if !ok || m.Gas != "CH4" || m.UnitID != 'C' {
		t.Fatalf("CH4 controller %+v %v", m, ok)
	}
	if got := p.CoilName(CoilH2SValve); got != "coil:ch4_valve" {
		t.Fatalf("coil 4 is %q", got)
	}
	if err := p.Inject(FaultMFCStuckOpen, "h2s"); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("stuck-open h2s on the graphene rig: %v", err)
	}
	if err := p.Inject(FaultSilent, "mfc-ch4"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRig("sapphire"); !errors.Is(err, ErrUnknownRig) {
		t.Fatalf("ParseRig: %v", err)
	}
	// The MoS2 rig is as it was.
	q, _ := newTest(t, true)
	if q.Rig() != RigMoS2 || q.CoilName(CoilH2SValve) != CoilName(CoilH2SValve) || q.Gases()[2] != "h2s" {
		t.Fatalf("MoS2 rig: %v %q %v", q.Rig(), q.CoilName(CoilH2SValve), q.Gases())
	}
}

func TestGrapheneSelfLimitingMonolayer(t *testing.T) {
	p := newGraphenePlant(t)
	f := growGraphene(t, p, 10000, 10, 20, 30*time.Minute)
	tr := f.Truth()
	if f.Graphene < 0.99 || f.GrapheneBilayer != 0 || tr.LayerCount != 1 || tr.Material != "graphene" {
		t.Fatalf("10 sccm CH4, 30 min at 1000 °C: %+v truth %+v", f, tr)
	}
	// Another hour adds nothing: the copper is covered.
	_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{true})
	p.Step(time.Hour)
	if g := p.Film(); g.GrapheneBilayer != 0 || g.Layers() > 1.0000001 {
		t.Fatalf("growth went on past one layer: %+v", g)
	}
}

func TestGrapheneCoverageGrowsWithTime(t *testing.T) {
	var prev float64
	for _, d := range []time.Duration{2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		p := newGraphenePlant(t)
		f := growGraphene(t, p, 10000, 10, 20, d)
		if !(f.Graphene > prev) || f.Graphene >= 1 {
			t.Fatalf("%v: coverage %v after %v", d, f.Graphene, prev)
		}
		prev = f.Graphene
	}
}

func TestGrapheneCH4Sweep(t *testing.T) {
	var prevBi float64
	for _, c := range []struct {
		ch4    float64
		layers int
	}{{5, 1}, {10, 1}, {20, 1}, {40, 2}, {50, 2}} {
		p := newGraphenePlant(t)
		f := growGraphene(t, p, 10000, c.ch4, 20, 40*time.Minute)
		tr := f.Truth()
		t.Logf("CH4 %2.0f sccm: coverage %.3f bilayer %.3f D/G %.3f domains %.1f µm", c.ch4, f.Graphene, f.GrapheneBilayer, f.GrapheneDG, f.GrapheneDomainUM)
		if tr.LayerCount != c.layers {
			t.Fatalf("CH4 %v sccm: layer count %d, want %d (%+v)", c.ch4, tr.LayerCount, c.layers, f)
		}
		if f.GrapheneBilayer < prevBi {
			t.Fatalf("CH4 %v sccm: bilayer %v below %v at lower flow", c.ch4, f.GrapheneBilayer, prevBi)
		}
		prevBi = f.GrapheneBilayer
	}
}

func TestGrapheneColderSmallerDomainsMoreD(t *testing.T) {
	hot := growGraphene(t, newGraphenePlant(t), 10000, 10, 20, time.Hour)
	cold := growGraphene(t, newGraphenePlant(t), 9000, 10, 20, 3*time.Hour)
	t.Logf("1000 °C: %.1f µm D/G %.3f; 900 °C: %.1f µm D/G %.3f", hot.GrapheneDomainUM, hot.GrapheneDG, cold.GrapheneDomainUM, cold.GrapheneDG)
	if !(cold.GrapheneDomainUM < hot.GrapheneDomainUM/2) || !(cold.GrapheneDG > 2*hot.GrapheneDG) {
		t.Fatalf("cold %+v hot %+v", cold, hot)
	}
}

func TestGrapheneRateDependsOnRatioAndTemperature(t *testing.T) {
	if grapheneRate(700, 3, 6) != 0 || grapheneRate(1000, 0, 6) != 0 {
		t.Fatal("growth below onset or without CH4")
	}
	if !(grapheneRate(1000, 3, 3) > grapheneRate(1000, 3, 12)) {
		t.Fatal("more H2 per CH4 does not slow growth")
	}
	if !(grapheneRate(1000, 6, 6) > grapheneRate(1000, 3, 3)) {
		t.Fatal("higher pressure at the same ratio does not speed growth")
	}
	prev := 0.0
	for c := 740.0; c <= 1080; c += 5 {
		r := grapheneRate(c, 3, 6)
		if r < prev || math.IsNaN(r) {
			t.Fatalf("rate %g at %v below %g", r, c, prev)
		}
		prev = r
	}
}

func TestGrapheneFoilMelts(t *testing.T) {
	p := newGraphenePlant(t)
	p.mu.Lock()
	p.tempC = 1090
	p.mu.Unlock()
	p.Step(time.Second)
	if !p.FoilMelted() {
		t.Fatal("the foil survived 1090 °C")
	}
}
