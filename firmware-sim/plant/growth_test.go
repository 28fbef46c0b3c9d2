package plant

import (
	"errors"
	"math"
	"testing"
	"time"
)

// growAt heats p to spC (0.1 °C units), settles, then lets 5 sccm of H2S into
// the chamber for d and returns the film.
func growAt(t *testing.T, p *Plant, sp uint16, d time.Duration) Film {
	t.Helper()
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRSetpoint, sp, 0, 1)
	_ = p.DIOWriteCoils("tcp", CoilPump, []bool{true, true, true})
	_ = p.SetMFCSetpoint("ar", 100)
	p.Step(2 * time.Hour) // heat up and settle
	_ = p.SetMFCSetpoint("h2s", 5)
	_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{true})
	p.Step(d)
	_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{false})
	p.Step(time.Minute)
	return p.Film()
}

// oldGrowthRate is GrowthRate as it was before WS2, constants inlined: the
// default precursor must give exactly the same numbers.
func oldGrowthRate(tempC, h2sSCCM float64) float64 {
	if h2sSCCM <= 0 || tempC <= 540.0 {
		return 0
	}
	tk := tempC + 273.15
	tref := 725.0 + 273.15
	r := (h2sSCCM / 5.0) / 600.0 * math.Exp(-14000.0*(1/tk-1/tref))
	if tempC < 600.0 {
		x := (tempC - 540.0) / (600.0 - 540.0)
		r *= x * x * (3 - 2*x)
	}
	return r
}

func TestMoS2RateUnchanged(t *testing.T) {
	for _, c := range []float64{0, 400, 540, 541, 560.5, 599.9, 600, 650, 725, 812.3, 1000} {
		for _, f := range []float64{0, 0.5, 5, 20} {
			want := oldGrowthRate(c, f)
			if got := GrowthRate(c, f); got != want {
				t.Fatalf("GrowthRate(%v, %v) = %v, was %v", c, f, got, want)
			}
			if got := MaterialGrowthRate(MoS2, c, f); got != want {
				t.Fatalf("MaterialGrowthRate(MoS2, %v, %v) = %v, was %v", c, f, got, want)
			}
		}
	}
	if MaterialGrowthRate("graphene", 800, 5) != 0 {
		t.Fatal("an unknown material grows")
	}
}

func TestGrowthRateMonotonicInTemperature(t *testing.T) {
	for _, m := range []Material{MoS2, WS2} {
		prev := 0.0
		for c := 500.0; c <= 1100; c += 2.5 {
			r := MaterialGrowthRate(m, c, 5)
			if r < prev {
				t.Fatalf("%s: rate %g at %.1f °C below %g at %.1f °C", m, r, c, prev, c-2.5)
			}
			prev = r
		}
		// A caller running at five temperatures gets thicker films at the hotter end.
		var rates []float64
		for _, c := range []float64{700, 750, 800, 850, 900} {
			rates = append(rates, MaterialGrowthRate(m, c, 5))
		}
		for i := 1; i < len(rates); i++ {
			if !(rates[i] > rates[i-1]) {
				t.Fatalf("%s: rates %v not increasing", m, rates)
			}
		}
	}
}

func TestWS2NeedsAHotterProcess(t *testing.T) {
	for _, c := range []float64{650, 700, 725, 800, 900, 1000} {
		if w, m := MaterialGrowthRate(WS2, c, 5), MaterialGrowthRate(MoS2, c, 5); !(w < m) {
			t.Fatalf("at %v °C WS2 grows at %g, MoS2 at %g", c, w, m)
		}
	}
	if r := MaterialGrowthRate(WS2, 620, 5); r != 0 {
		t.Fatalf("WS2 grows at its onset: %g", r)
	}
	// One layer in 10 min at 800 °C with 5 sccm; about 0.28 at 725 °C.
	if l := MaterialGrowthRate(WS2, 800, 5) * 600; math.Abs(l-1) > 1e-9 {
		t.Fatalf("WS2 at 800 °C: %v layers in 10 min", l)
	}
	if l := MaterialGrowthRate(WS2, 725, 5) * 600; l < 0.25 || l > 0.32 {
		t.Fatalf("WS2 at 725 °C: %v layers in 10 min", l)
	}
}

func TestWS2GrowsFromWO3(t *testing.T) {
	tests := []struct {
		name     string
		sp       uint16
		d        time.Duration
		min, max float64
	}{
		{"725 C 10 min", 7250, 10 * time.Minute, 0.2, 0.4},
		{"800 C 10 min", 8000, 10 * time.Minute, 0.8, 1.2},
		{"725 C 35 min", 7250, 35 * time.Minute, 0.8, 1.2},
		{"600 C 10 min", 6000, 10 * time.Minute, 0, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1000, 0)}
			p, err := New(Opts{RelayEnergised: true, Now: clk.Now, MaxWrites: 1000, Precursor: WO3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			f := growAt(t, p, tt.sp, tt.d)
			if f.MoS2 != 0 || f.WS2 < tt.min || f.WS2 > tt.max || p.Layers() != f.WS2 {
				t.Fatalf("film %+v (layers %v), want %g..%g of WS2", f, p.Layers(), tt.min, tt.max)
			}
			s := p.Snapshot()
			want := "WS2"
			if f.WS2 == 0 {
				want = ""
			}
			if s.Material != want || s.Precursor != WO3 || s.Film != f || s.Layers != f.WS2 {
				t.Fatalf("snapshot material %q precursor %q film %+v layers %v", s.Material, s.Precursor, s.Film, s.Layers)
			}
		})
	}
}

func TestDefaultPrecursorGrowsMoS2(t *testing.T) {
	p, _ := newTest(t, true)
	if p.Precursor() != MoO3 {
		t.Fatalf("default precursor %q", p.Precursor())
	}
	if s := p.Snapshot(); s.Material != "" || s.Precursor != MoO3 || s.Layers != 0 {
		t.Fatalf("bare: %+v", s)
	}
	f := growAt(t, p, 7250, 10*time.Minute)
	if f.WS2 != 0 || f.MoS2 < 0.8 || f.MoS2 > 1.2 || p.Layers() != f.MoS2 {
		t.Fatalf("film %+v", f)
	}
	if s := p.Snapshot(); s.Material != "MoS2" || s.Layers != f.MoS2 {
		t.Fatalf("snapshot material %q layers %v", s.Material, s.Layers)
	}
}

func TestPrecursorChangeReportsBothMaterials(t *testing.T) {
	p, _ := newTest(t, true)
	growAt(t, p, 7250, 5*time.Minute)
	if err := p.SetPrecursor(WO3); err != nil {
		t.Fatal(err)
	}
	f := growAt(t, p, 8000, 5*time.Minute)
	if !(f.MoS2 > 0.3) || !(f.WS2 > 0.3) || math.Abs(p.Layers()-(f.MoS2+f.WS2)) > 1e-12 {
		t.Fatalf("film %+v layers %v", f, p.Layers())
	}
	if s := p.Snapshot(); s.Material != "MoS2+WS2" || s.Precursor != WO3 {
		t.Fatalf("snapshot material %q precursor %q", s.Material, s.Precursor)
	}
}

func TestPrecursorValidation(t *testing.T) {
	tests := []struct {
		in   string
		want Precursor
		ok   bool
	}{
		{"MoO3", MoO3, true},
		{" wo3 ", WO3, true},
		{"WO3", WO3, true},
		{"", "", false},
		{"MoS2", "", false},
		{"V2O5", "", false},
	}
	for _, tt := range tests {
		got, err := ParsePrecursor(tt.in)
		if tt.ok != (err == nil) || got != tt.want || (err != nil && !errors.Is(err, ErrUnknownPrecursor)) {
			t.Errorf("ParsePrecursor(%q) = %q, %v", tt.in, got, err)
		}
	}
	p, _ := newTest(t, true)
	if err := p.SetPrecursor("V2O5"); !errors.Is(err, ErrUnknownPrecursor) || p.Precursor() != MoO3 {
		t.Fatalf("SetPrecursor(V2O5): %v, now %q", err, p.Precursor())
	}
	if _, err := New(Opts{Precursor: "V2O5"}); !errors.Is(err, ErrUnknownPrecursor) {
		t.Fatalf("New with V2O5: %v", err)
	}
}
