package plant

import "math"

// Graphene on copper foil (RigGraphene): low-pressure CVD from CH4 in H2 on
// Cu, after Li et al., "Large-area synthesis of high-quality and uniform
// graphene films on copper foils", Science 324, 1312 (2009): growth is
// surface-catalysed, so it stops once the copper is covered (self-limiting
// at one layer), except at high CH4 partial pressure, where bilayer islands
// nucleate under the first layer. The simulator's calibration:
//
//   - coverage θ₁ (the fraction of the foil covered by at least one layer)
//     grows as dθ₁/dt = k·(1 − θ₁): the exposed copper catalyses;
//     k = (p_CH4 / 2 Pa) / 300 s × exp(−Ea/k_B·(1/T − 1/1273 K)) × h,
//     Ea/k_B = 23000 K (≈ 2 eV), with the smooth onset of the TMD kinetics
//     (nil at and below 750 °C, full Arrhenius from 850 °C), and
//     h = 1 / (1 + (H2:CH4)/4): hydrogen etches what is weakly bound, so a
//     richer CH4:H2 ratio grows faster. At 1000 °C with 10 sccm CH4 and
//     20 sccm H2 (p_CH4 ≈ 3.4 Pa on the rig's pump) the foil is covered to
//     0.95 in about 12 min.
//   - bilayer coverage θ₂ (a fraction of the foil, never above θ₁) grows
//     only above a CH4 partial pressure of 5 Pa, towards
//     θ₂max = x/(1 + x) of the covered foil, x = (p_CH4 − 5 Pa)/5 Pa, with
//     half the monolayer's rate constant: about 15 sccm CH4 and below
//     give a monolayer; 30 sccm about half the foil bilayer, 40 sccm
//     nearly two thirds.
//   - domains: each increment of coverage has the domain size of where it
//     nucleated, L = 20 µm × exp(−(1000 °C − T)/80 °C) × (2 Pa/p_CH4)^¼
//     (colder and more CH4: more nuclei, smaller domains); the film's D/G
//     intensity ratio is 0.01 + 0.5 µm / L̄ over the coverage-weighted mean
//     size L̄ (grain boundaries scatter; 0.035 at 1000 °C, 0.1 at 900 °C).
const (
	grRefC       = 1000.0
	grRefPa      = 2.0
	grRefS       = 300.0
	grEaK        = 23000.0
	grOnsetC     = 750.0
	grFullC      = 850.0
	grH2Etch     = 4.0
	grBilayerPa  = 5.0
	grDomainUM   = 20.0
	grDomainC    = 80.0
	grDGFloor    = 0.01
	grDGPerUM    = 0.5
	copperMeltsC = 1084.6 // copper melts (the foil is gone: nothing grows)
)

// grapheneGrowth is the state of the graphene rig's copper foil.
type grapheneGrowth struct {
	cov, bi    float64 // θ₁ and θ₂
	domainSum  float64 // Σ dθ₁·L, µm
	melted     bool    // the foil went above copper's melting point
	ch4Exposed float64 // sccm·s of CH4 into the chamber
}

// grapheneRate is the rate constant k (1/s) of the monolayer coverage at
// tempC with CH4 and H2 partial pressures pCH4 and pH2 (Pa).
func grapheneRate(tempC, pCH4, pH2 float64) float64 {
	if !(pCH4 > 0) || tempC <= grOnsetC {
		return 0
	}
	tk := tempC + 273.15
	k := (pCH4 / grRefPa) / grRefS * math.Exp(-grEaK*(1/tk-1/(grRefC+273.15)))
	if tempC < grFullC {
		x := (tempC - grOnsetC) / (grFullC - grOnsetC)
		k *= x * x * (3 - 2*x)
	}
	return k / (1 + (pH2/pCH4)/grH2Etch)
}

// GrapheneDomainUM is the domain size (µm) of graphene nucleating at tempC
// with a CH4 partial pressure of pCH4 Pa.
func GrapheneDomainUM(tempC, pCH4 float64) float64 {
	return grDomainUM * math.Exp(-(grRefC-tempC)/grDomainC) * math.Pow(grRefPa/math.Max(pCH4, 0.01), 0.25)
}

// GrapheneBilayerMax is the fraction of the covered foil bilayer islands
// tend to at a CH4 partial pressure of pCH4 Pa (0 at and below 5 Pa).
func GrapheneBilayerMax(pCH4 float64) float64 {
	x := (pCH4 - grBilayerPa) / grBilayerPa
	if !(x > 0) {
		return 0
	}
	return x / (1 + x)
}

// stepGrapheneLocked grows graphene for h seconds from what flows into the
// chamber: CH4 on the third line, H2 on the second.
func (p *Plant) stepGrapheneLocked(h float64) {
	g := &p.graphene
	if p.tempC >= copperMeltsC {
		g.melted = true
	}
	ch4 := p.chamberInflowSCCMLocked(gasH2S) // the third line carries CH4 on this rig
	if ch4 <= 0 || g.melted {
		return
	}
	g.ch4Exposed += ch4 * h
	total := 0.0
	for i := range p.mfcs {
		total += p.chamberInflowSCCMLocked(i)
	}
	pCH4 := p.pressurePa * ch4 / total
	pH2 := p.pressurePa * p.chamberInflowSCCMLocked(gasH2) / total
	k := grapheneRate(p.tempC, pCH4, pH2)
	if k <= 0 {
		return
	}
	d1 := (1 - g.cov) * (1 - math.Exp(-k*h))
	g.cov += d1
	g.domainSum += d1 * GrapheneDomainUM(p.tempC, pCH4)
	if m := GrapheneBilayerMax(pCH4) * g.cov; m > g.bi {
		g.bi += (m - g.bi) * (1 - math.Exp(-k/2*h))
	}
	p.film.Graphene, p.film.GrapheneBilayer = g.cov, g.bi
	p.film.GrapheneDomainUM = g.domainSum / g.cov
	p.film.GrapheneDG = grDGFloor + grDGPerUM/p.film.GrapheneDomainUM
}

// FoilMelted reports whether the graphene rig's copper foil has been above
// copper's melting point (1084.6 °C): it is gone and nothing grows on it.
func (p *Plant) FoilMelted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.graphene.melted
}

// grapheneTruth is Film.Truth for a graphene film: coverage per layer
// count (0 bare copper, 1 monolayer, 2 bilayer islands), the layer count
// covering most of the covered foil (the thinner on a tie), and D/G.
func (f Film) grapheneTruth() Truth {
	c1 := clamp01(f.Graphene)
	c2 := math.Min(clamp01(f.GrapheneBilayer), c1)
	t := Truth{Material: string(GrapheneMaterial), Layers: c1 + c2, Coverage: map[int]float64{0: 1 - c1, 1: c1 - c2, 2: c2},
		DG: f.GrapheneDG, DomainUM: f.GrapheneDomainUM}
	switch {
	case c1 <= 0:
		t.Material, t.Coverage = "", map[int]float64{0: 1}
	case c2 > c1-c2:
		t.LayerCount = 2
	default:
		t.LayerCount = 1
	}
	return t
}

func clamp01(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return math.Min(v, 1)
}
