package plant

import "math"

// kinetics is one material's growth calibration: at refK (K) with refSCCM of
// H2S one layer takes refS seconds; the rate scales linearly with the flow
// and with an Arrhenius factor of activation temperature eaK (Ea/k_B, K),
// and fades in smoothly between onsetC and fullC (nil at and below onsetC).
type kinetics struct {
	refK, refSCCM, refS, eaK float64
	onsetC, fullC            float64
}

// MoS2 (MoO3 in the boat): one layer in 10 min at 725 °C with 5 sccm of H2S;
// Ea/k_B 14000 K (≈ 1.2 eV); nil below 540 °C, full Arrhenius from 600 °C.
// These are the values the simulator has always used; golden outputs depend
// on them.
const (
	growthRefC    = 725.0
	growthRefSCCM = 5.0
	growthRefS    = 600.0
	growthEaK     = 14000.0
	growthOnsetC  = 540.0
	growthFullC   = 600.0
)

// WS2 (WO3 in the boat): WO3 is far less volatile than MoO3 and WS2 is grown
// hotter (typically 800–900 °C against 650–750 °C for MoS2), so its
// calibration is one layer in 10 min at 800 °C with 5 sccm of H2S, with a
// steeper Ea/k_B of 18000 K (≈ 1.55 eV), nil below 620 °C and full Arrhenius
// from 680 °C. At 725 °C it grows about 0.28 of a layer in 10 min (a
// monolayer takes about 35 min there); it is slower than MoS2 at every
// temperature below about 1180 °C.
const (
	ws2RefC    = 800.0
	ws2RefSCCM = 5.0
	ws2RefS    = 600.0
	ws2EaK     = 18000.0
	ws2OnsetC  = 620.0
	ws2FullC   = 680.0
)

var (
	mos2Kinetics = kinetics{refK: growthRefC + 273.15, refSCCM: growthRefSCCM, refS: growthRefS, eaK: growthEaK,
		onsetC: growthOnsetC, fullC: growthFullC}
	ws2Kinetics = kinetics{refK: ws2RefC + 273.15, refSCCM: ws2RefSCCM, refS: ws2RefS, eaK: ws2EaK,
		onsetC: ws2OnsetC, fullC: ws2FullC}
)

// rate is the growth rate in layers per sim second. It never decreases with
// the temperature: the Arrhenius factor and the smooth onset both grow with it.
func (k kinetics) rate(tempC, h2sSCCM float64) float64 {
	if h2sSCCM <= 0 || tempC <= k.onsetC {
		return 0
	}
	tk := tempC + 273.15
	r := (h2sSCCM / k.refSCCM) / k.refS * math.Exp(-k.eaK*(1/tk-1/k.refK))
	if tempC < k.fullC { // smooth onset
		x := (tempC - k.onsetC) / (k.fullC - k.onsetC)
		r *= x * x * (3 - 2*x)
	}
	return r
}

// GrowthRate is the MoS2 growth rate in layers per sim second at temperature
// tempC with h2sSCCM of H2S flowing into the chamber.
func GrowthRate(tempC, h2sSCCM float64) float64 { return mos2Kinetics.rate(tempC, h2sSCCM) }

// MaterialGrowthRate is the growth rate of m in layers per sim second at
// temperature tempC with h2sSCCM of H2S flowing into the chamber; 0 for a
// material the plant does not grow.
func MaterialGrowthRate(m Material, tempC, h2sSCCM float64) float64 {
	switch m {
	case MoS2:
		return mos2Kinetics.rate(tempC, h2sSCCM)
	case WS2:
		return ws2Kinetics.rate(tempC, h2sSCCM)
	}
	return 0
}

// stepGrowthLocked grows the material of the boat's precursor for h seconds.
func (p *Plant) stepGrowthLocked(h float64) {
	switch p.opts.Rig {
	case RigGraphene:
		p.stepGrapheneLocked(h)
		return
	case RigMoS2TwoZone:
		p.stepSolidLocked(h)
		return
	}
	f := p.chamberInflowSCCMLocked(gasH2S)
	if f <= 0 {
		return
	}
	p.h2sExposed += f * h
	m, _ := p.precursor.Material() // validated by New and SetPrecursor
	p.film.add(m, MaterialGrowthRate(m, p.tempC, f)*h)
}
