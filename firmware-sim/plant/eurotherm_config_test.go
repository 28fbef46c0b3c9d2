package plant

import (
	"math"
	"testing"
	"time"
)

// These tests hold the configured variants of the Eurotherm 3200 model (dEC.P,
// rmP.U) to configs/manuals/eurotherm-3200.md and the register corpus
// drivers/regmap/testdata/eurotherm3200.yaml (read as data, not imported).

func newEuroCfg(t *testing.T, cfg EurothermConfig) *Plant {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{Now: clk.Now, MaxWrites: 1000, FurnaceModel: FurnaceEurotherm3200, Eurotherm: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestEurothermDecimals: the 16-bit region carries temperatures with dEC.P
// decimals (outputs and SP.RAT keep one), the float region is the same at
// every setting, and a 16-bit write is read with the unit's decimals.
func TestEurothermDecimals(t *testing.T) {
	for _, dec := range []int{0, 1, 2} {
		p := newEuroCfg(t, EurothermConfig{Decimals: dec})
		euroW(t, p, EuroFloatBase+2*EuroCommsSP, floatWords(250)...)
		if got, want := euroR(t, p, EuroCommsSP), uint16(250*math.Pow10(dec)); got != want {
			t.Errorf("dEC.P %d: Rm.SP 250 °C reads %d in the 16-bit region, want %d", dec, got, want)
		}
		if got := euroFloat(t, p, EuroCommsSP); got != 250 {
			t.Errorf("dEC.P %d: Rm.SP reads %v in the float region, want 250", dec, got)
		}
		euroW(t, p, EuroOPHigh, 455)
		if got := euroFloat(t, p, EuroOPHigh); math.Abs(float64(got)-45.5) > 1e-4 {
			t.Errorf("dEC.P %d: OP.HI 455 is %v %%, want 45.5 (outputs keep one decimal)", dec, got)
		}
		euroW(t, p, EuroTargetSP, uint16(300*math.Pow10(dec)))
		if got := euroFloat(t, p, EuroTargetSP); got != 300 {
			t.Errorf("dEC.P %d: TG.SP written as %d reads %v °C, want 300", dec, uint16(300*math.Pow10(dec)), got)
		}
		if got := euroR(t, p, EuroDecimalPoint); got != uint16(dec) {
			t.Errorf("dEC.P reads %d, want %d", got, dec)
		}
	}
}

// TestEurothermRampUnits: SP.RAT is in rmP.U units: 60 per hour, 1 per
// minute and 1/60 per second all ramp the working setpoint 1 °C a minute.
func TestEurothermRampUnits(t *testing.T) {
	for _, tc := range []struct {
		u    EuroRampUnit
		raw  uint16
		rate float32 // SP.RAT for 1 °C/min
	}{{EuroPerMinute, 0, 1}, {EuroPerHour, 1, 60}, {EuroPerSecond, 2, 1.0 / 60}} {
		p := newEuroCfg(t, EurothermConfig{Decimals: 1, RampUnits: tc.u})
		if got := euroR(t, p, EuroRampUnits); got != tc.raw {
			t.Fatalf("%s: rmP.U reads %d, want %d", tc.u, got, tc.raw)
		}
		euroW(t, p, EuroFloatBase+2*EuroSPRate, floatWords(tc.rate)...)
		start := euroFloat(t, p, EuroWorkingSP)
		euroW(t, p, EuroFloatBase+2*EuroTargetSP, floatWords(start+100)...)
		p.Step(60 * time.Second)
		if got := euroFloat(t, p, EuroWorkingSP) - start; math.Abs(float64(got)-1) > 0.01 {
			t.Errorf("%s: SP.RAT %v moved WKG.SP %v °C in a minute, want 1", tc.u, tc.rate, got)
		}
	}
}

// TestEurothermNVWrites counts the accepted writes of the parameters kept in
// non-volatile memory, and only those.
func TestEurothermNVWrites(t *testing.T) {
	p := newEuroCfg(t, DefaultEurothermConfig())
	euroW(t, p, EuroOPHigh, 0)
	euroW(t, p, EuroOPHigh, 1000)
	euroW(t, p, EuroAutoManual, 0)
	euroW(t, p, EuroRemoteSelect, 1)
	euroW(t, p, EuroCommsSP, 3000)
	euroW(t, p, EuroFloatBase+2*EuroCommsSP, floatWords(250)...)
	if err := p.EurothermWrite("tcp", EuroOPHigh, []uint16{2000}); err == nil {
		t.Fatal("OP.HI 200 % accepted")
	}
	got := p.Snapshot().Furnace.Eurotherm.NVWrites
	want := map[string]int{"output_high_limit": 2, "auto_manual": 1, "remote_select": 1}
	if len(got) != len(want) {
		t.Fatalf("NV writes %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("NV writes %v, want %v", got, want)
		}
	}
	if id := euroR(t, p, EuroInstIdent); id != EuroIdent {
		t.Fatalf("ident %#x", id)
	}
}

// TestEurothermConfigRefused: a configuration the instrument cannot have.
func TestEurothermConfigRefused(t *testing.T) {
	for _, c := range []EurothermConfig{{Decimals: 3}, {Decimals: -1}, {Decimals: 1, RampUnits: "day"}} {
		if _, err := New(Opts{FurnaceModel: FurnaceEurotherm3200, Eurotherm: &c}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestEurothermRemoteSPLeftOn: a unit left in auto on the comms setpoint
// powers up so; the default powers up manual on the local setpoint.
func TestEurothermRemoteSPLeftOn(t *testing.T) {
	p := newEuroCfg(t, EurothermConfig{Decimals: 1, RemoteSP: true})
	if euroR(t, p, EuroRemoteSelect) != 1 || euroR(t, p, EuroAutoManual) != 0 {
		t.Fatalf("remote select %d, A-M %d; want 1, 0", euroR(t, p, EuroRemoteSelect), euroR(t, p, EuroAutoManual))
	}
	p = newEuroCfg(t, DefaultEurothermConfig())
	if euroR(t, p, EuroRemoteSelect) != 0 || euroR(t, p, EuroAutoManual) != 1 {
		t.Fatal("the default power-on state changed")
	}
}
