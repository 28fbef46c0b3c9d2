package modelrouter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
	"hcp-edge/session/analysis/robust"
	mr "hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// benchCase is one simulated spectrum with its truth and its conditions.
type benchCase struct {
	spec  device.Spectrum
	mat   analysis.Material
	truth plant.Truth
	ms    int
	hard  bool // background, spikes, saturation or mixed coverage
	label string
	f     plant.SpectrumFaults
}

// benchCases draws n spectra (seeded): MoS2 and WS2; whole films of 1, 2, 3
// layers and bulk, and fractional ones (mixed coverage); integration 100 ms
// to 5 s; no background or a fluorescence of strength 0.5–4; no spikes or
// a mean of 2–10; sometimes a detector saturating at 20000 counts.
func benchCases(n int) []benchCase {
	rng := rand.New(rand.NewPCG(26, 2026))
	whole := []float64{1, 2, 3, 5}
	frac := []float64{0.6, 1.2, 1.35, 1.7, 1.85, 2.25, 2.8, 3.3}
	times := []int{100, 300, 1000, 3000, 5000}
	out := make([]benchCase, 0, n)
	for i := range n {
		mat := analysis.MoS2
		var layers float64
		if rng.IntN(2) == 0 {
			layers = whole[rng.IntN(len(whole))]
		} else {
			layers = frac[rng.IntN(len(frac))]
		}
		film := plant.Film{MoS2: layers}
		if i%2 == 1 {
			mat, film = analysis.WS2, plant.Film{WS2: layers}
		}
		var f plant.SpectrumFaults
		f.MixedCoverage = layers != float64(int(layers))
		if rng.IntN(2) == 0 {
			f.Fluorescence = 0.5 + 3.5*rng.Float64()
		}
		if rng.IntN(3) == 0 {
			f.Spikes = 2 + 8*rng.Float64()
		}
		if rng.IntN(8) == 0 {
			f.FullWell = 20000
		}
		ms := times[rng.IntN(len(times))]
		seed := rng.Uint64()
		x, c, truth := serialsim.SpectrumWith(film, ms, seed, serialsim.Effects{SpectrumFaults: f, Sample: seed ^ 0xabc})
		y := make([]float64, len(c))
		for k := range c {
			y[k] = float64(c[k])
		}
		out = append(out, benchCase{
			spec: device.Spectrum{Shift: x, Counts: y, Integration: time.Duration(ms) * time.Millisecond},
			mat:  mat, truth: truth, ms: ms, hard: f != (plant.SpectrumFaults{}), f: f,
			label: fmt.Sprintf("%s %.2fL %dms %+v", mat, layers, ms, f),
		})
	}
	return out
}

// grapheneCases draws n graphene spectra (seeded) at the shipped graphene
// recipe's integration (1 s, configs/recipes/graphene-cu.yaml), under the
// conditions of session/analysis's TestGrapheneAccuracy: films of 0.3 to
// full coverage of the copper with bilayer islands on 0 to 90 % of the
// covered foil, D/G 0.01 to 0.6; half with the copper's background of
// strength 0.5–4, a third with 2–10 cosmic-ray spikes, one in eight on a
// detector saturating at 20000 counts.
func grapheneCases(n int) []benchCase {
	const ms = 1000
	rng := rand.New(rand.NewPCG(36, 2026))
	out := make([]benchCase, 0, n)
	for range n {
		cov := 0.3 + 0.7*rng.Float64()
		bi := cov * 0.9 * rng.Float64()
		film := plant.Film{Graphene: cov, GrapheneBilayer: bi, GrapheneDG: 0.01 + 0.59*rng.Float64()}
		var f plant.SpectrumFaults
		if rng.IntN(2) == 0 {
			f.Fluorescence = 0.5 + 3.5*rng.Float64()
		}
		if rng.IntN(3) == 0 {
			f.Spikes = 2 + 8*rng.Float64()
		}
		if rng.IntN(8) == 0 {
			f.FullWell = 20000
		}
		seed := rng.Uint64()
		x, c, truth := serialsim.GrapheneSpectrum(film, ms, seed, serialsim.Effects{SpectrumFaults: f, Sample: seed ^ 0xabc})
		y := make([]float64, len(c))
		for k := range c {
			y[k] = float64(c[k])
		}
		out = append(out, benchCase{
			spec: device.Spectrum{Shift: x, Counts: y, Integration: ms * time.Millisecond},
			mat:  analysis.Graphene, truth: truth, ms: ms, hard: f != (plant.SpectrumFaults{}), f: f,
			label: fmt.Sprintf("graphene coverage %.2f bilayer %.2f of it %+v", cov, bi/cov, f),
		})
	}
	return out
}

// remoteStandIn is the benchmark's tier-3 model, served by modeltest: it
// reads only the Description a remote model is sent and answers with the
// tier-2 method applied to the down-sampled spectrum in it. It stands in
// for a real model's judgement, which this benchmark cannot measure; what
// it measures is the router: what is sent, what it costs, what is kept.
func remoteStandIn(d mr.Description) mr.Answer {
	x, y := make([]float64, len(d.Spectrum)), make([]float64, len(d.Spectrum))
	for i, p := range d.Spectrum {
		x[i], y[i] = p[0], p[1]
	}
	a := mr.Answer{Coverage: []mr.Coverage{}, Rationale: "stand-in: tier-2 method on the description's spectrum"}
	r, err := robust.Analyze(x, y, d.Material, robust.DefaultOpts())
	if err != nil || !r.Found {
		return a
	}
	a.Material, a.LayerCount, a.Confidence = r.Material, r.LayerCount, r.Confidence
	for _, c := range r.Coverage {
		a.Coverage = append(a.Coverage, mr.Coverage{Layers: c.Layers, Fraction: c.Fraction})
	}
	return a
}

type tally struct {
	n, correct, hardN, hardCorrect int
	time                           time.Duration
	cost                           float64
	remote, lost                   int
}

// TestAccuracyTable prints the accuracy table of docs/ANALYSIS.md
// (make bench-analysis; HCP_BENCH_ANALYSIS=1, HCP_BENCH_N spectra, 600 by
// default) and checks the bar: routed at least as accurate as
// always-best at no more than 25 % of its mean cost and time.
func TestAccuracyTable(t *testing.T) {
	if os.Getenv("HCP_BENCH_ANALYSIS") != "1" {
		t.Skip("HCP_BENCH_ANALYSIS=1 runs the accuracy benchmark (make bench-analysis)")
	}
	n := 600
	if s := os.Getenv("HCP_BENCH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	srv := modeltest.New()
	defer srv.Close()
	srv.SetAnswer(remoteStandIn)
	const remoteLatency = 50 * time.Millisecond
	srv.SetDelay(remoteLatency, 0)
	remote := mr.Model{ID: "remote-best", Tier: 3, Kind: mr.OpenAI, Instances: []string{srv.Base()}, Name: "stand-in",
		ContextWindow: 8192, CostIn: 0.005, CostOut: 0.015, Latency: 200 * time.Millisecond, Cleared: mr.T2}
	reg := mr.DefaultRegistry()
	reg.Models = append(reg.Models, remote)
	router, err := mr.New(reg, mr.Opts{DailyBudget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	onlyT1 := mr.DefaultRegistry()
	onlyT1.Models = onlyT1.Models[:1]
	r1, _ := mr.New(onlyT1, mr.Opts{})
	onlyT2 := mr.DefaultRegistry()
	r2, _ := mr.New(onlyT2, mr.Opts{Policy: mr.MaximizeQuality})

	cases := benchCases(n)
	strategies := []struct {
		name string
		r    *mr.Router
		mod  func(*mr.Request)
	}{
		{"tier 1 (fit)", r1, func(q *mr.Request) {}},
		{"tier 2 (robust)", r2, func(q *mr.Request) {}},
		{"tier 3 (remote, always best)", router, func(q *mr.Request) { q.Hint = mr.HintBest }},
		{"routed (balance, threshold 0.8)", router, func(q *mr.Request) {}},
	}
	res := make([]tally, len(strategies))
	var misses []string
	right := make([][]bool, len(strategies))
	what := make([][]string, len(strategies))
	for si, s := range strategies {
		tl := &res[si]
		for _, c := range cases {
			q := mr.Request{Spectrum: c.spec, Material: c.mat, ConfidenceThreshold: 0.8}
			s.mod(&q)
			t0 := time.Now()
			d, err := s.r.Analyze(context.Background(), q)
			el := time.Since(t0)
			if err != nil {
				tl.lost++
				continue
			}
			tl.n++
			tl.time += el
			tl.cost += d.Cost
			if d.Tier == 3 {
				tl.remote++
			}
			ok := d.Answer.LayerCount == c.truth.LayerCount
			right[si] = append(right[si], ok)
			what[si] = append(what[si], fmt.Sprintf("%d by %s (conf %.2f)", d.Answer.LayerCount, d.Model, d.Answer.Confidence))
			if ok {
				tl.correct++
			}
			if c.hard {
				tl.hardN++
				if ok {
					tl.hardCorrect++
				}
			}
		}
	}
	// The graphene spectra, each strategy on the same ones: their own row of
	// the conditions table, beside MoS2 and WS2, outside the TMD figures.
	// 1000 by default: a draw of 500 varies by about ±1 point.
	gn := 1000
	if s := os.Getenv("HCP_BENCH_GRAPHENE_N"); s != "" {
		fmt.Sscan(s, &gn)
	}
	gcases := grapheneCases(gn)
	gRight, gLost := make([]int, len(strategies)), make([]int, len(strategies))
	for si, s := range strategies {
		for _, c := range gcases {
			q := mr.Request{Spectrum: c.spec, Material: c.mat, ConfidenceThreshold: 0.8}
			s.mod(&q)
			d, err := s.r.Analyze(context.Background(), q)
			switch {
			case err != nil:
				gLost[si]++
			case d.Answer.LayerCount == c.truth.LayerCount:
				gRight[si]++
			}
		}
	}
	for i, c := range cases {
		if right[2][i] != right[3][i] {
			misses = append(misses, fmt.Sprintf("%s (truth %d): always-best %s, routed %s", c.label, c.truth.LayerCount, what[2][i], what[3][i]))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d simulated spectra (%d with background, spikes, saturation or mixed coverage); remote stand-in latency %v\n", len(cases), res[0].hardN, remoteLatency)
	fmt.Fprintf(&b, "%d graphene spectra on copper besides, in their own row of the second table (not in the first)\n\n", len(gcases))
	fmt.Fprintf(&b, "| strategy | layer count correct | on hard spectra | mean time | mean cost | remote calls | lost |\n|---|---|---|---|---|---|---|\n")
	for i, s := range strategies {
		tl := res[i]
		fmt.Fprintf(&b, "| %s | %.1f %% | %.1f %% | %v | %.6f | %d | %d |\n", s.name,
			100*float64(tl.correct)/float64(tl.n), 100*float64(tl.hardCorrect)/float64(max(1, tl.hardN)),
			(tl.time / time.Duration(tl.n)).Round(10*time.Microsecond), tl.cost/float64(tl.n), tl.remote, tl.lost)
	}
	best, routed := res[2], res[3]
	fmt.Fprintf(&b, "\nrouted / always-best: accuracy %+.1f points, mean cost %.1f %%, mean time %.1f %%\n",
		100*(float64(routed.correct)/float64(routed.n)-float64(best.correct)/float64(best.n)),
		100*routed.cost/best.cost, 100*float64(routed.time)/float64(best.time))
	// Layer count correct per condition, per strategy.
	groups := []struct {
		name string
		in   func(c benchCase) bool
	}{
		{"MoS2", func(c benchCase) bool { return c.mat == analysis.MoS2 }},
		{"WS2", func(c benchCase) bool { return c.mat == analysis.WS2 }},
		{"100–300 ms", func(c benchCase) bool { return c.ms <= 300 }},
		{"1–5 s", func(c benchCase) bool { return c.ms >= 1000 }},
		{"no background", func(c benchCase) bool { return c.f.Fluorescence == 0 }},
		{"fluorescence", func(c benchCase) bool { return c.f.Fluorescence > 0 }},
		{"spikes", func(c benchCase) bool { return c.f.Spikes > 0 }},
		{"saturating detector", func(c benchCase) bool { return c.f.FullWell > 0 }},
		{"whole layers", func(c benchCase) bool { return !c.f.MixedCoverage }},
		{"mixed coverage", func(c benchCase) bool { return c.f.MixedCoverage }},
		{"clean (none of the above)", func(c benchCase) bool { return !c.hard }},
	}
	fmt.Fprintf(&b, "\n| condition | spectra |")
	for _, s := range strategies {
		fmt.Fprintf(&b, " %s |", s.name)
	}
	fmt.Fprintf(&b, "\n|---|---|%s\n", strings.Repeat("---|", len(strategies)))
	for _, g := range groups {
		n := 0
		ok := make([]int, len(strategies))
		for i, c := range cases {
			if !g.in(c) {
				continue
			}
			n++
			for si := range strategies {
				if i < len(right[si]) && right[si][i] {
					ok[si]++
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %d |", g.name, n)
		for si := range strategies {
			fmt.Fprintf(&b, " %.1f %% |", 100*float64(ok[si])/float64(max(1, n)))
		}
		b.WriteString("\n")
		if g.name == "WS2" {
			fmt.Fprintf(&b, "| graphene (1 s, shipped integration) | %d |", len(gcases))
			for si := range strategies {
				fmt.Fprintf(&b, " %.1f %% |", 100*float64(gRight[si])/float64(max(1, len(gcases))))
			}
			b.WriteString("\n")
		}
	}
	st, _ := json.Marshal(router.Tracker().Stats())
	t.Logf("tracker: %s", st)
	fmt.Println(b.String())
	for _, m := range misses {
		t.Log("routed and always-best differ: " + m)
	}
	if routed.correct < best.correct || routed.cost > 0.25*best.cost || routed.time > best.time/4 || routed.lost+best.lost > 0 {
		t.Errorf("routed misses the bar")
	}
	// Issue 36's bar: the graphene layer count right on at least 95 % of at
	// least 500 spectra, routed, and no graphene analysis lost.
	if g := float64(gRight[3]) / float64(max(1, len(gcases))); len(gcases) < 500 || g < 0.95 || gLost[2]+gLost[3] > 0 {
		t.Errorf("graphene: routed right on %.1f %% of %d (lost %d routed, %d always-best); the bar is 95 %% of at least 500", 100*g, len(gcases), gLost[3], gLost[2])
	}
}
