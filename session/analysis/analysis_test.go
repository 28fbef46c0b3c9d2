package analysis

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/serialsim"
)

// synth is a synthetic spectrum on the simulator's axis (150–550 cm⁻¹ in
// 0.5 steps): a sloped background, optional E2g and A1g Lorentzians, a
// silicon peak, and Gaussian noise of standard deviation sigma.
type synth struct {
	e2g, a1g     float64 // positions; 0: absent
	ampE, ampA   float64
	hwE, hwA     float64
	bg, slope    float64
	sigma        float64
	seed         uint64
	step, lo, hi float64
}

func (s synth) spectrum() device.Spectrum {
	if s.step == 0 {
		s.step, s.lo, s.hi = 0.5, 150, 550
	}
	if s.hwE == 0 {
		s.hwE = 1.75
	}
	if s.hwA == 0 {
		s.hwA = 2.0
	}
	rng := rand.New(rand.NewPCG(s.seed, 7))
	var sp device.Spectrum
	for x := s.lo; x <= s.hi+1e-9; x += s.step {
		y := s.bg + s.slope*(x-400) + 20000*lorentz(x, 520.7, 1.8)
		if s.e2g > 0 {
			y += s.ampE * lorentz(x, s.e2g, s.hwE)
		}
		if s.a1g > 0 {
			y += s.ampA * lorentz(x, s.a1g, s.hwA)
		}
		y += s.sigma * rng.NormFloat64()
		sp.Shift = append(sp.Shift, x)
		sp.Counts = append(sp.Counts, y)
	}
	return sp
}

func TestAnalyzeSynthetic(t *testing.T) {
	tests := []struct {
		name     string
		s        synth
		found    bool
		layers   int
		bulk     bool
		minConf  float64
		maxConf  float64
		distance float64
	}{
		{name: "monolayer clean", s: synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, slope: -2, sigma: 40, seed: 1},
			found: true, layers: 1, minConf: 0.95, maxConf: 1, distance: 18.7},
		{name: "bilayer", s: synth{e2g: 383.8, a1g: 405.3, ampE: 25000, ampA: 29000, bg: 1600, sigma: 40, seed: 2},
			found: true, layers: 2, minConf: 0.95, maxConf: 1, distance: 21.5},
		{name: "trilayer", s: synth{e2g: 383.3, a1g: 406.3, ampE: 37000, ampA: 46000, bg: 1600, sigma: 40, seed: 3},
			found: true, layers: 3, minConf: 0.9, maxConf: 1, distance: 23.0},
		{name: "bulk", s: synth{e2g: 382.6, a1g: 407.6, ampE: 50000, ampA: 70000, bg: 1600, sigma: 40, seed: 4},
			found: true, layers: 4, bulk: true, minConf: 0.9, maxConf: 1, distance: 25.0},
		{name: "monolayer noisy", s: synth{e2g: 385.0, a1g: 404.0, ampE: 600, ampA: 650, bg: 1600, slope: 1, sigma: 40, seed: 5},
			found: true, layers: 1, minConf: 0.5, maxConf: 1, distance: 19.0},
		{name: "border 1-2 is uncertain", s: synth{e2g: 384.5, a1g: 404.7, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 6},
			found: true, layers: 2, minConf: 0.2, maxConf: 0.65, distance: 20.2},
		{name: "bare substrate", s: synth{bg: 1600, slope: -1, sigma: 40, seed: 7}, found: false},
		{name: "only E2g", s: synth{e2g: 385, ampE: 5000, bg: 1600, sigma: 40, seed: 8}, found: false},
		{name: "only A1g", s: synth{a1g: 404, ampA: 5000, bg: 1600, sigma: 40, seed: 9}, found: false},
		{name: "peaks below noise", s: synth{e2g: 385, a1g: 404, ampE: 60, ampA: 60, bg: 1600, sigma: 40, seed: 10}, found: false},
		{name: "coarse axis", s: synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 11, step: 1, lo: 300, hi: 500},
			found: true, layers: 1, minConf: 0.9, maxConf: 1, distance: 18.7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Analyze(tc.s.spectrum())
			if err != nil {
				t.Fatal(err)
			}
			if r.Found != tc.found {
				t.Fatalf("found %v (%s), want %v", r.Found, r.Reason, tc.found)
			}
			if !tc.found {
				if r.Reason == "" || r.LayerCount != 0 || r.Confidence != 0 {
					t.Fatalf("not found but %+v", r)
				}
				return
			}
			if r.LayerCount != tc.layers || r.Bulk != tc.bulk {
				t.Fatalf("layers %d bulk %v, want %d %v (distance %.3f)", r.LayerCount, r.Bulk, tc.layers, tc.bulk, r.Distance)
			}
			if math.Abs(r.Distance-tc.distance) > 0.15+3*r.DistanceErr {
				t.Fatalf("distance %.3f ± %.3f, want %.2f", r.Distance, r.DistanceErr, tc.distance)
			}
			if r.Confidence < tc.minConf || r.Confidence > tc.maxConf {
				t.Fatalf("confidence %.3f, want in [%g, %g] (%+v)", r.Confidence, tc.minConf, tc.maxConf, r)
			}
			if !(r.DistanceErr > 0) || !(r.E2g.PositionErr > 0) || !(r.A1g.FWHM > 0) {
				t.Fatalf("uncertainties missing: %+v", r)
			}
		})
	}
}

func TestAnalyzeRecoversTruth(t *testing.T) {
	s := synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 42}
	r, err := Analyze(s.spectrum())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
		err       float64
	}{
		{"E2g position", r.E2g.Position, 385.2, r.E2g.PositionErr},
		{"A1g position", r.A1g.Position, 403.9, r.A1g.PositionErr},
		{"E2g FWHM", r.E2g.FWHM, 3.5, r.E2g.FWHMErr},
		{"A1g FWHM", r.A1g.FWHM, 4.0, r.A1g.FWHMErr},
	} {
		if math.Abs(c.got-c.want) > 5*c.err+1e-3 {
			t.Errorf("%s = %.4f ± %.4f, want %.3f", c.name, c.got, c.err, c.want)
		}
	}
}

// TestSimulatorPositions fits spectra built with the simulator's own peak
// positions (firmware-sim/serialsim.MoS2Peaks) for 1..4 layers.
func TestSimulatorPositions(t *testing.T) {
	for _, layers := range []float64{1, 2, 3, 4, 6} {
		e2g, a1g := serialsim.MoS2Peaks(layers)
		amt := math.Min(layers, 4)
		s := synth{e2g: e2g, a1g: a1g, ampE: 2500 * amt * 5, ampA: 2600 * amt * 5 * (1 + 0.1*(amt-1)),
			bg: 1500 + 200*5*math.Exp(-(400-150)/120.0), slope: -1.5, sigma: math.Sqrt(1700), seed: uint64(layers * 10)}
		r, err := Analyze(s.spectrum())
		if err != nil {
			t.Fatal(err)
		}
		want := int(math.Min(layers, 4))
		if !r.Found || r.LayerCount != want || r.Bulk != (want == 4) {
			t.Fatalf("layers %v (distance %.2f): got %+v", layers, a1g-e2g, r)
		}
		if r.Confidence < 0.9 {
			t.Errorf("layers %v: confidence %.3f", layers, r.Confidence)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name    string
		d, s    float64
		layers  int
		bulk    bool
		minConf float64
		maxConf float64
	}{
		{"monolayer core", 18.9, 0.02, 1, false, 0.99, 1},
		{"monolayer edge", 20.1, 0.0, 1, false, 0.5, 0.6},
		{"bilayer core", 21.5, 0.05, 2, false, 0.99, 1},
		{"trilayer", 23.0, 0.05, 3, false, 0.99, 1},
		{"bulk", 25.0, 0.05, 4, true, 0.99, 1},
		{"bulk top edge", 26.5, 0, 4, true, 0.5, 0.51},
		{"too small", 15, 0.05, 0, false, 0, 0},
		{"too large", 30, 0.05, 0, false, 0, 0},
		{"NaN", math.NaN(), 0.05, 0, false, 0, 0},
		{"wide uncertainty", 18.9, 2, 1, false, 0.3, 0.7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, b, c := Classify(tc.d, tc.s)
			if l != tc.layers || b != tc.bulk || c < tc.minConf || c > tc.maxConf {
				t.Fatalf("Classify(%v, %v) = %d %v %.3f", tc.d, tc.s, l, b, c)
			}
		})
	}
}

func TestUnusable(t *testing.T) {
	good := synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 1}.spectrum()
	nan := make([]float64, len(good.Counts))
	for i := range nan {
		nan[i] = math.NaN()
	}
	tests := []struct {
		name          string
		shift, counts []float64
	}{
		{"empty", nil, nil},
		{"mismatched", []float64{1, 2}, []float64{1}},
		{"all NaN", good.Shift, nan},
		{"outside window", []float64{100, 101, 102}, []float64{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := AnalyzeWith(tc.shift, tc.counts, DefaultOpts()); !errors.Is(err, ErrNoData) {
				t.Fatalf("err %v, want ErrNoData", err)
			}
		})
	}
}

func TestUnsortedAndDuplicates(t *testing.T) {
	sp := synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 3}.spectrum()
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(sp.Shift), func(i, j int) {
		sp.Shift[i], sp.Shift[j] = sp.Shift[j], sp.Shift[i]
		sp.Counts[i], sp.Counts[j] = sp.Counts[j], sp.Counts[i]
	})
	sp.Shift = append(sp.Shift, sp.Shift[:50]...)
	sp.Counts = append(sp.Counts, sp.Counts[:50]...)
	sp.Shift = append(sp.Shift, math.NaN(), math.Inf(1))
	sp.Counts = append(sp.Counts, 5, 7)
	r, err := Analyze(sp)
	if err != nil || !r.Found || r.LayerCount != 1 {
		t.Fatalf("%+v %v", r, err)
	}
}

func FuzzAnalyze(f *testing.F) {
	enc := func(sp device.Spectrum) []byte {
		var b []byte
		for i := range sp.Shift {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sp.Shift[i]))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sp.Counts[i]))
		}
		return b
	}
	f.Add([]byte{})
	f.Add(enc(synth{e2g: 385.2, a1g: 403.9, ampE: 12000, ampA: 12500, bg: 1600, sigma: 40, seed: 1}.spectrum()))
	f.Add(enc(synth{bg: 1600, sigma: 40, seed: 2, step: 2, lo: 340, hi: 450}.spectrum()))
	f.Add(enc(device.Spectrum{Shift: []float64{math.NaN(), 400, math.Inf(-1)}, Counts: []float64{1, math.NaN(), 3}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sp device.Spectrum
		for len(data) >= 16 {
			sp.Shift = append(sp.Shift, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			sp.Counts = append(sp.Counts, math.Float64frombits(binary.LittleEndian.Uint64(data[8:])))
			data = data[16:]
		}
		r, err := Analyze(sp)
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !(r.Confidence >= 0 && r.Confidence <= 1) {
			t.Fatalf("confidence %v", r.Confidence)
		}
		if r.Found && (!finite(r.Distance) || r.LayerCount < 0 || r.LayerCount > 4) {
			t.Fatalf("found with %+v", r)
		}
		if !r.Found && (r.LayerCount != 0 || r.Reason == "") {
			t.Fatalf("not found with %+v", r)
		}
	})
}

// TestModelMatchesFit checks that Result.Model reproduces the fitted curve:
// on a noiseless two-Lorentzian spectrum it returns the spectrum itself.
func TestModelMatchesFit(t *testing.T) {
	var xs, ys []float64
	for x := 340.0; x <= 450; x += 0.5 {
		y := 100 + 0.2*(x-395) + 1000/(1+((x-385)/2.5)*((x-385)/2.5)) + 1200/(1+((x-404)/3)*((x-404)/3))
		xs, ys = append(xs, x), append(ys, y)
	}
	r, err := AnalyzeWith(xs, ys, DefaultOpts())
	if err != nil || !r.Found {
		t.Fatalf("analysis: %v %+v", err, r)
	}
	for i, x := range xs {
		if x < WindowLo || x > WindowHi {
			continue
		}
		if d := math.Abs(r.Model(x) - ys[i]); d > 1 {
			t.Fatalf("Model(%g) = %g, spectrum %g", x, r.Model(x), ys[i])
		}
	}
}
