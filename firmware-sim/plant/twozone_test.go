package plant

import (
	"errors"
	"math"
	"testing"
	"time"
)

// The two-zone rig's physics (twozone.go).

const (
	zSulfur = 0 // index of the sulfur zone in Zones
	zGrowth = 1
)

// newTwoZone is a two-zone plant, relay energised, with Ar at arSCCM
// through an open line valve.
func newTwoZone(t *testing.T, arSCCM float64) *Plant {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayEnergised: true, Now: clk.Now, Rig: RigMoS2TwoZone, FurnaceModel: FurnaceEurotherm3200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.DIOWriteCoils("test", CoilArValve, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMFCSetpoint("ar", arSCCM); err != nil {
		t.Fatal(err)
	}
	return p
}

// zoneAuto puts zone i's 3200 in auto towards spC at rate °C/min.
func zoneAuto(t *testing.T, p *Plant, i int, spC, rate float64) {
	t.Helper()
	for _, w := range [][2]int{{EuroSPRate, int(rate * 10)}, {EuroTargetSP, int(spC * 10)}, {EuroAutoManual, 0}} {
		if err := p.ZoneWrite(i, "rtu", w[0], []uint16{uint16(w[1])}); err != nil {
			t.Fatalf("zone %d write %d: %v", i, w[0], err)
		}
	}
}

func zoneT(t *testing.T, p *Plant, i int) float64 {
	t.Helper()
	v, ok := p.ZoneTemperature(i)
	if !ok {
		t.Fatalf("no zone %d", i)
	}
	return v
}

// TestSulfurVapourPressure: the fit passes through the CRC table's points
// and rises with the temperature.
func TestSulfurVapourPressure(t *testing.T) {
	for _, pt := range sulfurVP {
		if got := SulfurVapourPa(pt[0] - 273.15); math.Abs(got/pt[1]-1) > 1e-9 {
			t.Errorf("%g K: %g Pa, want %g", pt[0], got, pt[1])
		}
	}
	prev := 0.0
	for c := 20.0; c <= 450; c += 5 {
		v := SulfurVapourPa(c)
		if !(v > prev) {
			t.Fatalf("%g °C: %g Pa, not above %g at %g °C", c, v, prev, c-5)
		}
		prev = v
	}
	// the numbers twozone.go's comment gives, 100 sccm of Ar
	for _, c := range []struct{ tC, want float64 }{{83, 0.0018}, {180, 0.95}, {200, 2.2}, {220, 4.7}} {
		if got := SulfurSupplySCCM(c.tC, 100); math.Abs(got/c.want-1) > 0.06 {
			t.Errorf("supply at %g °C: %.4g sccm, the comment says %g", c.tC, got, c.want)
		}
	}
	if SulfurSupplySCCM(200, 0) != 0 {
		t.Error("sulfur supplied without carrier")
	}
}

// TestSulfurSupplyRisesWithSulfurZone: the sulfur zone's controller sets
// the sulfur the carrier brings: each setpoint step up raises it.
func TestSulfurSupplyRisesWithSulfurZone(t *testing.T) {
	p := newTwoZone(t, 100)
	p.Step(time.Minute)
	prev := p.SulfurSupply()
	for _, sp := range []float64{150, 180, 200, 220} {
		zoneAuto(t, p, zSulfur, sp, 0)
		p.Step(40 * time.Minute)
		tz := zoneT(t, p, zSulfur)
		if math.Abs(tz-sp) > 2 {
			t.Fatalf("sulfur zone %.1f °C, setpoint %g", tz, sp)
		}
		s := p.SulfurSupply()
		if !(s > prev) {
			t.Fatalf("at %g °C the supply %.4g sccm is not above %.4g", sp, s, prev)
		}
		if want := SulfurSupplySCCM(tz, 100); math.Abs(s/want-1) > 0.05 {
			t.Errorf("at %.1f °C supply %.4g, want about %.4g", tz, s, want)
		}
		prev = s
	}
	if g := zoneT(t, p, zGrowth); math.Abs(g-AmbientC) > 1 {
		t.Errorf("the growth zone warmed to %.1f °C from the sulfur zone", g)
	}
}

// TestTwoZoneCoupling: the hot growth zone warms the idle sulfur zone
// through the tube, to about the comment's 83 °C.
func TestTwoZoneCoupling(t *testing.T) {
	p := newTwoZone(t, 100)
	zoneAuto(t, p, zGrowth, 750, 0)
	p.Step(4 * time.Hour)
	if g := zoneT(t, p, zGrowth); math.Abs(g-750) > 2 {
		t.Fatalf("growth zone %.1f °C", g)
	}
	if s := zoneT(t, p, zSulfur); math.Abs(s-83) > 3 {
		t.Errorf("idle sulfur zone %.1f °C, want about 83", s)
	}
}

// TestTwoZoneNoGrowthWithoutSulfur: a hot growth zone grows nothing worth
// the name without the sulfur zone, and nothing at all without carrier.
func TestTwoZoneNoGrowthWithoutSulfur(t *testing.T) {
	p := newTwoZone(t, 100)
	zoneAuto(t, p, zGrowth, 750, 0)
	p.Step(3 * time.Hour)
	l0 := p.Layers()
	p.Step(30 * time.Minute) // the hold of TestTwoZoneGrowsMoS2, which grows > 0.5
	if l := p.Layers() - l0; l > 0.005 {
		t.Errorf("%.4f layers in 30 min at 750 °C with the sulfur zone off", l)
	}

	q := newTwoZone(t, 0) // no carrier: the sulfur stays upstream
	zoneAuto(t, q, zGrowth, 750, 0)
	zoneAuto(t, q, zSulfur, 200, 0)
	q.Step(4 * time.Hour)
	if l := q.Layers(); l != 0 {
		t.Errorf("%g layers without Ar", l)
	}
	if s := q.Snapshot().Solid; s == nil || s.DeliveredSCCMs != 0 {
		t.Errorf("solid %+v", s)
	}
}

// TestTwoZoneGrowsMoS2: the recipe's order — growth zone to temperature,
// then the sulfur zone up — grows MoS2, and the truth the Raman is judged
// by says so.
func TestTwoZoneGrowsMoS2(t *testing.T) {
	p := newTwoZone(t, 100)
	zoneAuto(t, p, zGrowth, 750, 0)
	p.Step(3 * time.Hour)
	zoneAuto(t, p, zSulfur, 200, 0)
	p.Step(30 * time.Minute)
	l := p.Layers()
	if l < 0.5 || l > 4 {
		t.Errorf("%.3f layers after 30 min of sulfur at 750 °C", l)
	}
	s := p.Snapshot()
	if s.Truth.Material != string(MoS2) || s.Film.MoS2 != l {
		t.Errorf("truth %+v film %+v", s.Truth, s.Film)
	}
	if s.Solid.MoO3Supply < 0.99 {
		t.Errorf("MoO3 supply %g: sulfur reached the boat cold", s.Solid.MoO3Supply)
	}
	if s.ReactiveExposureSCCMs() != s.Solid.DeliveredSCCMs || !(s.Solid.DeliveredSCCMs > 0) {
		t.Errorf("exposure %g, delivered %g", s.ReactiveExposureSCCMs(), s.Solid.DeliveredSCCMs)
	}
	if s.Zones["sulfur"].Unit != 1 || s.Zones["growth"].Unit != 2 || s.Furnace.TemperatureC != s.Zones["growth"].TemperatureC {
		t.Errorf("zones %+v, furnace %.1f", s.Zones, s.Furnace.TemperatureC)
	}
}

// TestTwoZoneSulfurFirstPoisons: sulfur before temperature sulfurizes the
// cold boat, and the same hold then grows less.
func TestTwoZoneSulfurFirstPoisons(t *testing.T) {
	grow := func(sulfurFirst bool) (float64, float64) {
		p := newTwoZone(t, 100)
		if sulfurFirst {
			zoneAuto(t, p, zSulfur, 200, 0)
			p.Step(30 * time.Minute)
		}
		zoneAuto(t, p, zGrowth, 750, 0)
		p.Step(3 * time.Hour)
		zoneAuto(t, p, zSulfur, 200, 0)
		p.Step(30 * time.Minute)
		return p.Layers(), p.Snapshot().Solid.MoO3Supply
	}
	good, full := grow(false)
	bad, left := grow(true)
	if !(left < 0.5*full) || !(bad < good) {
		t.Errorf("sulfur first: %.3f layers (MoO3 supply %.3f); growth first: %.3f (%.3f)", bad, left, good, full)
	}
}

// TestTwoZoneControllersApart: each zone's 3200 is its own; the write log
// names each; a zone the rig lacks is an illegal address; the sulfur zone
// is on the same relay as the furnace.
func TestTwoZoneControllersApart(t *testing.T) {
	p := newTwoZone(t, 100)
	if got := p.Zones(); len(got) != 2 || got[0] != "sulfur" || got[1] != "growth" {
		t.Fatalf("zones %v", got)
	}
	zoneAuto(t, p, zSulfur, 180, 0)
	v := make([]uint16, 1)
	if err := p.ZoneRead(zGrowth, EuroTargetSP, v); err != nil || v[0] != uint16(AmbientC*10) {
		t.Errorf("growth TG.SP %d %v after writing the sulfur zone's", v[0], err)
	}
	if err := p.ZoneRead(zSulfur, EuroTargetSP, v); err != nil || v[0] != 1800 {
		t.Errorf("sulfur TG.SP %d %v", v[0], err)
	}
	if err := p.EurothermRead(EuroTargetSP, v); err != nil || v[0] != uint16(AmbientC*10) {
		t.Errorf("unit 1's map is the growth zone: TG.SP %d %v", v[0], err)
	}
	if err := p.ZoneRead(2, EuroTargetSP, v); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("zone 2: %v", err)
	}
	if err := p.ZoneWrite(-1, "rtu", EuroTargetSP, []uint16{100}); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("zone -1: %v", err)
	}
	w := p.Writes(0)
	if len(w) == 0 || w[len(w)-1].Device != "furnace-sulfur" {
		t.Errorf("write log %+v", w)
	}
	if d := p.Devices(); d[0] != "dio" || d[1] != "furnace-sulfur" || d[2] != "furnace-growth" || d[3] != "mfc-ar" || len(d) != 6 {
		t.Errorf("devices %v", d)
	}
	if err := p.Inject(FaultSilent, "furnace-sulfur"); err != nil {
		t.Errorf("silent on the sulfur zone: %v", err)
	}
	if g := p.Gases(); len(g) != 1 || g[0] != "ar" {
		t.Errorf("gases %v", g)
	}
	if _, ok := p.MFC(""); ok {
		t.Error("an MFC without a gas")
	}
	p.Step(10 * time.Minute)
	if s := zoneT(t, p, zSulfur); !(s > 100) {
		t.Fatalf("sulfur zone %.1f °C after 10 min at 180", s)
	}
	p.mu.Lock()
	p.relay = false
	p.mu.Unlock()
	p.Step(30 * time.Minute)
	if s := zoneT(t, p, zSulfur); s > 60 {
		t.Errorf("sulfur zone %.1f °C 30 min after the relay dropped", s)
	}
}

// TestTwoZoneNeedsEurotherm: the two-zone rig's zones are on 3200s; and
// RigFor chooses it from its one gas line.
func TestTwoZoneNeedsEurotherm(t *testing.T) {
	if _, err := New(Opts{Rig: RigMoS2TwoZone}); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("two-zone rig on the sim controller: %v", err)
	}
	for _, c := range []struct {
		gases []string
		want  Rig
	}{{[]string{"Ar"}, RigMoS2TwoZone}, {[]string{"Ar", "H2", "H2S"}, RigMoS2}, {[]string{"ar", "h2"}, RigMoS2}, {[]string{"CH4", "Ar", "H2"}, RigGraphene}} {
		if got, err := RigFor(c.gases); err != nil || got != c.want {
			t.Errorf("RigFor(%v) = %s %v, want %s", c.gases, got, err, c.want)
		}
	}
	if _, err := RigFor([]string{""}); !errors.Is(err, ErrUnknownRig) {
		t.Errorf("RigFor(\"\"): %v", err)
	}
	if pr, ok := RigMoS2TwoZone.Grows("mos2"); !ok || pr != MoO3 {
		t.Errorf("grows %s %v", pr, ok)
	}
}

// TestTwoZoneThermalFaults: thermal-runaway, tc-open and tc-frozen take a
// zone: "sulfur" acts on the sulfur zone alone, "growth" (or none) on the
// growth zone, the furnace; the relay still cuts a runaway.
func TestTwoZoneThermalFaults(t *testing.T) {
	p := newTwoZone(t, 100)
	if err := p.Inject(FaultThermalRunaway, "sulfur"); err != nil {
		t.Fatal(err)
	}
	p.Step(20 * time.Minute)
	if s, g := zoneT(t, p, zSulfur), zoneT(t, p, zGrowth); s < 300 || math.Abs(g-AmbientC) > 1 {
		t.Fatalf("runaway on the sulfur zone: sulfur %.1f °C, growth %.1f °C", s, g)
	}
	if err := p.Inject(FaultTCOpen, "sulfur"); err != nil {
		t.Fatal(err)
	}
	v := make([]uint16, 1)
	if err := p.ZoneRead(zSulfur, EuroPV, v); err != nil || v[0] != EuroPVBreak {
		t.Errorf("sulfur PV %#x %v during its sensor break", v[0], err)
	}
	if err := p.ZoneRead(zGrowth, EuroPV, v); err != nil || v[0] == EuroPVBreak {
		t.Errorf("growth PV %#x %v during the sulfur zone's sensor break", v[0], err)
	}
	if err := p.Inject(FaultTCFrozen, "growth"); err != nil || !p.FaultActive(FaultTCFrozen, "") {
		t.Errorf("tc-frozen growth: %v, active on the furnace %t", err, p.FaultActive(FaultTCFrozen, ""))
	}
	if err := p.Inject(FaultTCOpen, "middle"); !errors.Is(err, ErrBadTarget) {
		t.Errorf("tc-open middle: %v", err)
	}
	q, err := New(Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Inject(FaultThermalRunaway, "sulfur"); !errors.Is(err, ErrBadTarget) {
		t.Errorf("a zone's fault on the one-furnace rig: %v", err)
	}
}

// TestTwoZoneInProcess: Zone sets a zone's 3200 as its driver leaves it
// (automatic on the comms setpoint, from the power-on manual mode) and
// reads it back in engineering units; a value outside the instrument's
// ranges changes nothing; the other zone is untouched; a zone the rig
// lacks is an illegal address.
func TestTwoZoneInProcess(t *testing.T) {
	p := newTwoZone(t, 100)
	set := ZoneControl{SetpointC: 180, RateCPerMin: 10, OutputHighPct: 100}
	if _, err := p.Zone(zSulfur, &set); err != nil {
		t.Fatal(err)
	}
	p.Step(20 * time.Minute)
	c, err := p.Zone(zSulfur, nil)
	if err != nil || c.SetpointC != 180 || c.RateCPerMin != 10 || c.OutputHighPct != 100 || !(c.PVC > 100) || c.WorkingSetpointC != 180 {
		t.Fatalf("sulfur zone %+v, %v", c, err)
	}
	v := make([]uint16, 2)
	if err := p.ZoneRead(zSulfur, EuroAutoManual, v[:1]); err != nil || v[0] != 0 {
		t.Errorf("A-M %d %v, want auto", v[0], err)
	}
	if err := p.ZoneRead(zSulfur, EuroRemoteSelect, v[:1]); err != nil || v[0] != 1 {
		t.Errorf("remote select %d %v, want remote", v[0], err)
	}
	for _, bad := range []ZoneControl{{SetpointC: 1300}, {SetpointC: math.NaN()}, {SetpointC: 100, RateCPerMin: -1}, {SetpointC: 100, OutputHighPct: 101}} {
		if _, err := p.Zone(zSulfur, &bad); !errors.Is(err, ErrIllegalValue) {
			t.Errorf("%+v: %v, want ErrIllegalValue", bad, err)
		}
	}
	if c2, _ := p.Zone(zSulfur, nil); c2.SetpointC != 180 || c2.OutputHighPct != 100 {
		t.Errorf("a refused write changed the zone: %+v", c2)
	}
	if g, _ := p.Zone(zGrowth, nil); g.SetpointC != AmbientC || g.OutputHighPct != 100 || g.OutputPct != 0 {
		t.Errorf("growth zone %+v after setting the sulfur zone's", g)
	}
	if _, err := p.Zone(2, nil); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("zone 2: %v", err)
	}
}
