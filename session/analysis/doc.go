// Package analysis reads a Raman spectrum of MoS2 or WS2: it removes the
// baseline, fits the E2g and A1g peaks with Lorentzians, and maps the
// A1g−E2g distance to a layer count with a confidence; AnalyzeFor also names
// the material, or decides it (Auto). It is pure: no I/O, no clock, no
// goroutines.
//
// # Method
//
// Analyze keeps the finite points of the spectrum, sorts them by shift, and
// works in the window 350–440 cm⁻¹. A first baseline is the straight line
// through the medians of the window's two edge regions (350–365 and
// 425–440 cm⁻¹), which hold no MoS2 band. The noise is estimated robustly
// (median absolute second difference). A peak is detected in the E2g region
// (375–392 cm⁻¹) and in the A1g region (398–416 cm⁻¹) when the smoothed
// baseline-corrected maximum stands at least DetectSNR noise levels above
// the baseline; when either is missing the result says "no MoS2 found"
// (Found false) rather than failing.
//
// The model y = b0 + b1·(x−xc) + Σ A/(1+((x−x0)/γ)²) over the window (two
// Lorentzians on a linear baseline, eight parameters) is fitted by
// Levenberg–Marquardt with an analytic Jacobian (written here; no external
// optimiser). The parameter uncertainties are the square roots of the
// diagonal of s²(JᵀJ)⁻¹ with s² = SSR/(n−p); the distance's uncertainty uses
// the covariance of the two positions.
//
// # Layer count
//
// The mapping is the one of Lee et al. 2010, the seed task's reference
// (doi:10.1021/nl903868w as cited by the seed; see Caveats): the E2g mode
// softens and the A1g mode stiffens with the number of layers, so their
// distance grows from about 18.5–19.5 cm⁻¹ for a monolayer to 21–22 for a
// bilayer, about 23 for three layers and about 25 for bulk. Bands (cm⁻¹):
//
//	layers  band           core (confidence 1)
//	1       [17.0, 20.2)   [18.5, 19.5]
//	2       [20.2, 22.4)   [21.0, 22.0]
//	3       [22.4, 24.0)   [22.7, 23.3]
//	bulk    [24.0, 26.5]   [24.5, 25.5]   (LayerCount 4, Bulk true: "four or more")
//
// Outside every band the peaks are reported but LayerCount is 0 and the
// confidence 0.
//
// # Confidence
//
// Confidence = fit × position × certainty, each in [0,1]: fit from the fit's
// R² over the window (1 − 5(1−R²), clamped) and the weaker peak's
// signal-to-noise ratio (1 − exp(−SNR/8)); position is 1 inside the band's
// core and falls linearly to 0.5 at the band's edge (a distance on the border
// of two classes is a coin toss); certainty is the probability that the
// distance lies inside its band given its fitted uncertainty (normal).
//
// # Materials
//
// Analyze and AnalyzeWith read MoS2, as described above, and leave
// Result.Material empty. AnalyzeFor and AnalyzeMaterial take the material:
// MoS2 or WS2 run the same method in that material's window, detection
// regions and bands, then also require both fitted peaks inside the
// material's published ranges (532 nm, with a margin), naming the material
// when they are; a spectrum of the other material is "not found", with a
// Reason saying what it shows instead. For MoS2 spectra the numbers are
// those of AnalyzeWith.
//
//	material  window    E2g region  A1g region  published ranges (held to)
//	MoS2      350–440   375–392     398–416     E2g 381.5–386.5, A1g 401.5–409.5
//	WS2       330–445   348–364     410–428     E2g 353.5–358.5, A1g 415.5–422.5
//
// WS2 (Berkdemir et al., Sci. Rep. 3, 1755 (2013), doi:10.1038/srep01755:
// E2g¹ ≈ 357 → 355.5 and A1g ≈ 418 → 420.5 cm⁻¹ from monolayer to bulk)
// maps its A1g−E2g¹ distance to layers by these bands (cm⁻¹), centred on the
// simulator's 61.0, 62.8, 63.9 and 65.0:
//
//	layers  band            core (confidence 1)
//	1       [59.5, 61.9)    [60.5, 61.5]
//	2       [61.9, 63.35)   [62.4, 63.2]
//	3       [63.35, 64.45)  [63.6, 64.2]
//	bulk    [64.45, 66.5]   [64.7, 65.5]
//
// Auto decides the material by one rule. Each material is analysed as
// above; a material is present when its analysis found its two bands in its
// published ranges.
//
//   - Neither present: Found false, Reason "neither MoS2 nor WS2 found: …"
//     (ErrNoData when no window held enough points).
//   - One present: its result, unless the other material's two bands stand
//     at least DetectSNR noise levels in what the fit leaves (spectrum minus
//     Model) inside the other's published ranges; then, as below.
//   - Both present: ambiguous. The result of the one with the higher SNR,
//     its confidence scaled by 1 − (weaker/stronger) and capped at
//     AmbiguousMaxConfidence (0.3), and a Reason beginning "ambiguous:". A
//     film of both materials is not a sample of either.
//
// So an empty or band-less spectrum is never named, and a mixed one is
// named only with a confidence below any sensible threshold.
//
// # Identification
//
// Identify names what a spectrum shows, whatever it is analysed as, by the
// same presence rule as Auto: no material present is NameNone (confidence
// NoneConfidence, 0.2: absence of bands is weak evidence); one is its name,
// with the confidence P(E2g in its published range) × P(A1g in its range),
// from each fitted position and its standard error, times the weaker band's
// detection strength 1 − 2^−(SNR/DetectSNR)²; more than one is NameMixture,
// with Fractions, each material's share of the band heights (a share of the
// signal, not of the area: the cross-sections differ), and the least of the
// materials' confidences. LayerCountOf maps a thickness in layers (a growth
// model's) to the layer count the analysis reports, bulk from
// BulkLayerCount (4).
//
// # Caveats
//
// doi:10.1021/nl903868w, which the seed cites as Lee et al. 2010, resolves to
// our knowledge to Splendiani et al., "Emerging photoluminescence in
// monolayer MoS2" (Nano Lett. 2010); the Raman distance-per-layer data of
// Lee et al. ("Anomalous lattice vibrations of single- and few-layer MoS2")
// are in ACS Nano 4, 2695 (2010), doi:10.1021/nn1003937. The bands above
// follow the values of the latter (532 nm excitation); other excitation
// wavelengths, strain and doping shift them by a few tenths of a cm⁻¹.
//
// For WS2 the 2L and 3L classes are narrow (about 1 cm⁻¹ apart) and follow
// the simulator's table, interpolated on the published trend rather than
// taken from a published table. Under 514–532 nm excitation a real WS2
// monolayer also shows the resonant second-order 2LA(M) band at ≈ 352 cm⁻¹,
// overlapping E2g¹ and often stronger; the simulator does not draw it, and a
// real spectrum would need a third Lorentzian there before E2g¹ can be
// trusted.
//
// A fractional coverage (a monolayer with bilayer islands) gives a distance
// between two bands; it is classified by the nearer band with a reduced
// confidence, not reported as a fraction.
package analysis
