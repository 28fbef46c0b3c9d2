package analysis

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
)

// simulated is one acquisition of the simulated spectrometer (5 s, the
// executor's default integration) of a sample with film on it.
func simulated(film plant.Film, seed uint64) device.Spectrum {
	shift, counts := serialsim.Spectrum(film, 5000, seed)
	sp := device.Spectrum{Shift: shift, Counts: make([]float64, len(counts))}
	for i, c := range counts {
		sp.Counts[i] = float64(c)
	}
	return sp
}

func TestAnalyzeForSimulatedFilms(t *testing.T) {
	tests := []struct {
		name   string
		film   plant.Film
		want   Material
		layers int
	}{
		{"WS2 monolayer", plant.Film{WS2: 1}, WS2, 1},
		{"WS2 bilayer", plant.Film{WS2: 2}, WS2, 2},
		{"WS2 three layers", plant.Film{WS2: 3}, WS2, 3},
		{"WS2 bulk", plant.Film{WS2: 4}, WS2, 4},
		{"WS2 thick bulk", plant.Film{WS2: 7}, WS2, 4},
		{"MoS2 monolayer", plant.Film{MoS2: 1}, MoS2, 1},
		{"MoS2 bilayer", plant.Film{MoS2: 2}, MoS2, 2},
		{"MoS2 three layers", plant.Film{MoS2: 3}, MoS2, 3},
		{"MoS2 bulk", plant.Film{MoS2: 5}, MoS2, 4},
	}
	for _, tt := range tests {
		for seed := uint64(1); seed <= 3; seed++ {
			sp := simulated(tt.film, seed)
			for _, m := range []Material{Auto, tt.want} {
				r, err := AnalyzeFor(sp, m)
				if err != nil {
					t.Fatalf("%s seed %d as %s: %v", tt.name, seed, m, err)
				}
				if !r.Found || r.Material != tt.want || r.LayerCount != tt.layers || r.Bulk != (tt.layers == 4) {
					t.Fatalf("%s seed %d as %s: found %v material %q layers %d (distance %.2f ± %.2f): %s",
						tt.name, seed, m, r.Found, r.Material, r.LayerCount, r.Distance, r.DistanceErr, r.Reason)
				}
				if r.Confidence < 0.8 {
					t.Errorf("%s seed %d as %s: confidence %.3f (distance %.2f ± %.2f)", tt.name, seed, m, r.Confidence, r.Distance, r.DistanceErr)
				}
			}
		}
	}
}

// TestAnalyzeForMoS2KeepsTheNumbers: for MoS2 spectra AnalyzeFor gives
// AnalyzeWith's result, with the material named.
func TestAnalyzeForMoS2KeepsTheNumbers(t *testing.T) {
	spectra := []device.Spectrum{
		simulated(plant.Film{MoS2: 1}, 7), simulated(plant.Film{MoS2: 2.5}, 8), simulated(plant.Film{MoS2: 6}, 9),
		synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, slope: -2, sigma: 40, seed: 1}.spectrum(),
		synth{e2g: 384.5, a1g: 404.7, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 6}.spectrum(),
	}
	for i, sp := range spectra {
		want, err := Analyze(sp)
		if err != nil || !want.Found || want.Material != "" {
			t.Fatalf("spectrum %d: Analyze %+v %v", i, want, err)
		}
		for _, m := range []Material{MoS2, Auto} {
			got, err := AnalyzeFor(sp, m)
			if err != nil || got.Material != MoS2 {
				t.Fatalf("spectrum %d as %s: %+v %v", i, m, got, err)
			}
			got.Material = ""
			if got != want {
				t.Fatalf("spectrum %d as %s:\n got %+v\nwant %+v", i, m, got, want)
			}
		}
	}
}

// TestAmbiguousIsNotConfidentlyNamed: what is not clearly one material gets
// no name, or a low confidence, never a confident wrong answer.
func TestAmbiguousIsNotConfidentlyNamed(t *testing.T) {
	tests := []struct {
		name string
		sp   device.Spectrum
	}{
		{"film of both, equal", simulated(plant.Film{MoS2: 1, WS2: 1}, 1)},
		{"film of both, more WS2", simulated(plant.Film{MoS2: 1, WS2: 2}, 2)},
		{"film of both, more MoS2", simulated(plant.Film{MoS2: 3, WS2: 1}, 3)},
		{"bare substrate", simulated(plant.Film{}, 4)},
		{"too little to show", simulated(plant.Film{WS2: 0.1}, 5)},
		{"WS2 E2g with MoS2 A1g", synth{e2g: 356.5, a1g: 404, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 6}.spectrum()},
		{"MoS2 E2g with WS2 A1g", synth{e2g: 384.5, a1g: 418.5, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 7}.spectrum()},
		{"bands between the materials", synth{e2g: 370, a1g: 412, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 8}.spectrum()},
		{"WS2 bands barely above the noise", synth{e2g: 356.5, a1g: 419, ampE: 150, ampA: 150, bg: 1600, sigma: 40, seed: 9}.spectrum()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := AnalyzeFor(tt.sp, Auto)
			if err != nil {
				t.Fatal(err)
			}
			if r.Found && r.Confidence > AmbiguousMaxConfidence {
				t.Fatalf("named %s with confidence %.3f (%d layers): %s", r.Material, r.Confidence, r.LayerCount, r.Reason)
			}
			if r.Reason == "" {
				t.Fatalf("no reason: %+v", r)
			}
			if !r.Found && (r.Material != "" || r.Confidence != 0 || r.LayerCount != 0) {
				t.Fatalf("not found but %+v", r)
			}
		})
	}
}

func TestAnalyzeForWrongMaterial(t *testing.T) {
	r, err := AnalyzeFor(simulated(plant.Film{MoS2: 1}, 1), WS2)
	if err != nil || r.Found || !strings.Contains(r.Reason, "no WS2 found") || !strings.Contains(r.Reason, "shows MoS2 bands") {
		t.Fatalf("MoS2 as WS2: %+v %v", r, err)
	}
	r, err = AnalyzeFor(simulated(plant.Film{WS2: 2}, 2), MoS2)
	if err != nil || r.Found || !strings.Contains(r.Reason, "no MoS2 found") || !strings.Contains(r.Reason, "shows WS2 bands") {
		t.Fatalf("WS2 as MoS2: %+v %v", r, err)
	}
}

func TestAnalyzeForUnusable(t *testing.T) {
	for _, m := range []Material{Auto, MoS2, WS2} {
		if _, err := AnalyzeFor(device.Spectrum{}, m); !errors.Is(err, ErrNoData) {
			t.Errorf("empty as %s: %v", m, err)
		}
	}
	if _, err := AnalyzeFor(simulated(plant.Film{WS2: 1}, 1), "WSe2"); !errors.Is(err, ErrUnknownMaterial) {
		t.Errorf("WSe2: %v", err)
	}
	// Only the MoS2 window is covered: auto still analyses what is there.
	var sp device.Spectrum
	for x := 346.0; x <= 442; x += 0.5 {
		sp.Shift = append(sp.Shift, x)
		sp.Counts = append(sp.Counts, 1600+12000*lorentz(x, 385.2, 1.75)+12500*lorentz(x, 403.9, 2))
	}
	if r, err := AnalyzeFor(sp, Auto); err != nil || r.Material != MoS2 || r.LayerCount != 1 {
		t.Fatalf("MoS2 window only: %+v %v", r, err)
	}
}

func TestParseMaterial(t *testing.T) {
	tests := []struct {
		in   string
		want Material
		ok   bool
	}{
		{"MoS2", MoS2, true}, {"ws2", WS2, true}, {" AUTO ", Auto, true}, {"", Auto, true},
		{"WSe2", "", false}, {"MoO3", "", false},
	}
	for _, tt := range tests {
		got, err := ParseMaterial(tt.in)
		if got != tt.want || tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrUnknownMaterial)) {
			t.Errorf("ParseMaterial(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestClassifyForWS2(t *testing.T) {
	tests := []struct {
		d      float64
		layers int
		bulk   bool
	}{
		{61.0, 1, false}, {62.8, 2, false}, {63.9, 3, false}, {65.0, 4, true}, {58, 0, false}, {68, 0, false},
	}
	for _, tt := range tests {
		l, b, c := ClassifyFor(WS2, tt.d, 0.05)
		if l != tt.layers || b != tt.bulk || (l > 0 && c < 0.9) || (l == 0 && c != 0) {
			t.Errorf("ClassifyFor(WS2, %v) = %d %v %.3f", tt.d, l, b, c)
		}
	}
	// The WS2 bands hold the simulator's separations in their cores.
	for i, b := range BandsFor(WS2) {
		e, a := serialsim.WS2Peaks(float64(i + 1))
		if d := a - e; d < b.CoreLo || d > b.CoreHi {
			t.Errorf("%d layers: simulator separation %.2f outside the core %g–%g", b.Layers, d, b.CoreLo, b.CoreHi)
		}
	}
	if l, _, _ := ClassifyFor(MoS2, 18.9, 0.05); l != 1 {
		t.Errorf("ClassifyFor(MoS2, 18.9) = %d", l)
	}
	if l, _, c := ClassifyFor(Auto, 18.9, 0.05); l != 0 || c != 0 || BandsFor(Auto) != nil {
		t.Error("Auto has bands")
	}
	if lo, hi, ok := WindowFor(Auto); !ok || lo != 330 || hi != 445 || math.IsInf(lo, 0) {
		t.Errorf("WindowFor(Auto) = %v %v %v", lo, hi, ok)
	}
	if lo, hi, ok := WindowFor(MoS2); !ok || lo != WindowLo || hi != WindowHi {
		t.Errorf("WindowFor(MoS2) = %v %v %v", lo, hi, ok)
	}
}

// grow runs the simulated plant with precursor in the boat: spC (0.1 °C
// units) settled, then 5 sccm of H2S for d. It returns the film.
func grow(t *testing.T, precursor plant.Precursor, spC uint16, d time.Duration) plant.Film {
	t.Helper()
	p, err := plant.New(plant.Opts{RelayEnergised: true, Precursor: precursor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.FurnaceWriteHolding("tcp", plant.HRWatchdogTimeout, []uint16{0}))
	must(p.FurnaceWriteHolding("tcp", plant.HRSetpoint, []uint16{spC, 0, 1}))
	must(p.DIOWriteCoils("tcp", plant.CoilPump, []bool{true, true, true}))
	must(p.SetMFCSetpoint("ar", 100))
	p.Step(2 * time.Hour)
	must(p.SetMFCSetpoint("h2s", 5))
	must(p.DIOWriteCoils("tcp", plant.CoilH2SValve, []bool{true}))
	p.Step(d)
	must(p.DIOWriteCoils("tcp", plant.CoilH2SValve, []bool{false}))
	return p.Film()
}

// TestGrownFilmsAreNamed grows films in the simulated plant, the way a
// synthesis would, and reads their simulated spectra back.
func TestGrownFilmsAreNamed(t *testing.T) {
	tests := []struct {
		name      string
		precursor plant.Precursor
		spC       uint16
		d         time.Duration
		want      Material
		layers    int
	}{
		{"MoO3 725 C 10 min", plant.MoO3, 7250, 10 * time.Minute, MoS2, 1},
		{"WO3 800 C 10 min", plant.WO3, 8000, 10 * time.Minute, WS2, 1},
		{"WO3 850 C 10 min", plant.WO3, 8500, 10 * time.Minute, WS2, 2},
		{"WO3 900 C 20 min", plant.WO3, 9000, 20 * time.Minute, WS2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := grow(t, tt.precursor, tt.spC, tt.d)
			r, err := AnalyzeFor(simulated(f, 1), Auto)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Found || r.Material != tt.want || r.LayerCount != tt.layers {
				t.Fatalf("film %+v: found %v %q %d layers (distance %.2f, confidence %.2f) %s",
					f, r.Found, r.Material, r.LayerCount, r.Distance, r.Confidence, r.Reason)
			}
		})
	}
}

func FuzzAnalyzeForAuto(f *testing.F) {
	enc := func(sp device.Spectrum) []byte {
		var b []byte
		for i := range sp.Shift {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sp.Shift[i]))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sp.Counts[i]))
		}
		return b
	}
	f.Add([]byte{})
	f.Add(enc(simulated(plant.Film{WS2: 1}, 1)))
	f.Add(enc(simulated(plant.Film{MoS2: 1, WS2: 1}, 2)))
	f.Add(enc(synth{e2g: 356.5, a1g: 404, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 6, step: 2, lo: 320, hi: 460}.spectrum()))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sp device.Spectrum
		for len(data) >= 16 {
			sp.Shift = append(sp.Shift, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			sp.Counts = append(sp.Counts, math.Float64frombits(binary.LittleEndian.Uint64(data[8:])))
			data = data[16:]
		}
		r, err := AnalyzeFor(sp, Auto)
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !(r.Confidence >= 0 && r.Confidence <= 1) {
			t.Fatalf("confidence %v", r.Confidence)
		}
		if r.Found != (r.Material == MoS2 || r.Material == WS2) {
			t.Fatalf("found %v material %q", r.Found, r.Material)
		}
		if !r.Found && (r.LayerCount != 0 || r.Reason == "") {
			t.Fatalf("not found with %+v", r)
		}
	})
}
