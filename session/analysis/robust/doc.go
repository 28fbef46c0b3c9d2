// Package robust is the tier-2 local analysis of a Raman spectrum of MoS2 or
// WS2: what the tier-1 fit of package analysis does, on a spectrum cleaned
// of what real spectra carry, plus a decomposition of a film of mixed layer
// counts into the coverage of each. It is pure: no I/O, no clock, no
// goroutines.
//
// # Method
//
//  1. Saturation: a run of pixels at the spectrum's highest count (the
//     detector's full well) is masked; the masked points are left out of
//     every fit.
//  2. Cosmic-ray spikes: a pixel that stands above the mean of its two
//     neighbours by more than half its height above the local median and by
//     more than SpikeSigma noise levels is a spike (a Raman band spreads over
//     several pixels and never steps like that); it is replaced by its
//     neighbours' mean, and the search repeats so a two-pixel spike goes too.
//  3. The silicon line (520.7 cm⁻¹) is fitted alone; its position calibrates
//     the axis (every shift moves by 520.7 − position, when the line is seen,
//     unsaturated, and within 3 cm⁻¹).
//  4. Baseline: asymmetric least squares (Eilers and Boelens 2005): the
//     smooth z minimising Σ wᵢ(yᵢ−zᵢ)² + λ Σ(Δ²zᵢ)², with wᵢ = p above z and
//     1−p below, iterated; it follows a sloped, curved fluorescence
//     background and passes under the bands. Solved as a banded system.
//  5. The tier-1 two-Lorentzian fit (analysis.AnalyzeMaterial) on the
//     corrected points gives the peaks with their uncertainties from the fit
//     covariance, the distance, SNR and residual.
//  6. Mixed layers: the corrected window is modelled, by linear least
//     squares with non-negative band amplitudes, as the bands of one layer
//     count or of two neighbouring ones at their published positions (a
//     common axis offset and width are searched on a small grid); the model
//     is chosen by the Bayesian information criterion. A band's intensity
//     grows about linearly with the layers under the laser spot, so the
//     coverage of layer count k is its two bands' amplitudes over k,
//     normalised over the covered area. LayerCount is the layer count with
//     the most coverage.
//
// # Confidence
//
// Confidence = fit × SNR × dominance: the tier-1 fit factor (R²), the weaker
// band's signal-to-noise (1 − exp(−SNR/8)), and how clearly one layer count
// dominates (0.5 for an even mixture, 1 from 80 % coverage).
//
// # Caveats
//
// The coverage is a fraction of the covered area: the bare part of the spot
// is not measured (it would need an absolute intensity reference). The
// layer positions are the published ones the simulator also uses; a real
// rig should check them against its own calibration samples.
package robust
